/**
 * The `pets` connection over upstream pages. Pages are found only through `Link: rel="next"`, so a
 * cursor names an upstream page (path and query) and how many of its pets were already returned.
 * A field asks each page for as many pets as it still needs, reads at most one page per pet it
 * returns, and stops at a page it has read before, at an empty page, or at its operation's budget.
 */

import type { GraphQLResolveInfo } from 'graphql';
import { type GatewayContext, noteStale } from './context.js';
import { badUserInput, upstreamUnavailable } from './errors.js';
import type { PetConnectionModel, PetEdgeModel, PetModel } from './models.js';
import { isPetsPageUrl } from './rest/link.js';
import { canCharge } from './rest/operation.js';

export interface PetsArguments {
  readonly first: number;
  readonly after: string | undefined;
  readonly status: string | undefined;
}

/** The spec's largest page size. */
const MAX_PAGE_SIZE = 100;

export async function fetchPetConnection(
  context: GatewayContext,
  args: PetsArguments,
  path: GraphQLResolveInfo['path'],
): Promise<PetConnectionModel> {
  const { client } = context;
  let page = client.petsUrl({ limit: args.first, status: args.status });
  let offset = 0;
  if (args.after !== undefined) {
    const position = context.cursors.decode(args.after);
    if (position.status !== args.status) throw badUserInput('after belongs to a query with another status filter');
    page = resolve(position.page, client.baseUrl);
    if (!isPetsPageUrl(page, client.baseUrl))
      throw badUserInput('after is not a cursor this API gave for this API key');
    offset = position.offset;
  }

  const edges: PetEdgeModel[] = [];
  // Pages read, by pageKey: named only once a link is to be followed, as most fields read one page.
  const read = new Set<string>();
  /** The age of the oldest page served stale, if any was. */
  let oldest: number | undefined;
  const done = (connection: PetConnectionModel) => {
    noteStale(context, path, oldest);
    return connection;
  };
  for (;;) {
    page = sized(page, offset + args.first - edges.length);
    // context.client keeps every page it lists for the request's pet loader.
    const { pets, next, staleMs } = await client.listPets(context.key, page);
    oldest = staleMs === undefined ? oldest : Math.max(oldest ?? 0, staleMs);
    const here = pathOf(page);
    const after = next === undefined ? undefined : pathOf(next);
    const taken = pets.slice(offset, offset + args.first - edges.length);
    for (let i = 0; i < taken.length; i++) {
      const consumed = offset + i + 1;
      // The last pet of a page points at the next page, so continuing costs no re-read of this one.
      const position =
        consumed === pets.length && after !== undefined
          ? { page: after, offset: 0, status: args.status }
          : { page: here, offset: consumed, status: args.status };
      edges.push({ position, node: taken[i] as PetModel });
    }
    const restOfPage = offset + taken.length < pets.length;
    if (edges.length === args.first || restOfPage || next === undefined) {
      return done({ edges, hasNextPage: restOfPage || next !== undefined });
    }
    // An upstream that pages in circles, or links on from a page with nothing left to give.
    read.add(pageKey(page));
    const looped = read.has(pageKey(next));
    if (looped || taken.length === 0) {
      if (edges.length === 0) {
        throw upstreamUnavailable(
          `the Pet Store ${looped ? 'linked back to a page already read' : 'linked on from an empty page'}`,
        );
      }
      return done({ edges, hasNextPage: !looped });
    }
    // Out of budget: what was read is a whole answer; the last cursor continues in another operation.
    if (!canCharge(context.operation)) return done({ edges, hasNextPage: true });
    page = next;
    offset = 0;
    // A page answered from the cache resolves at once: let the event loop breathe between pages.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * `page` asking for `wanted` pets (at most the spec's 100). `limit` is the page-size parameter of
 * `GET /pets`; a page whose link numbers pages (`page=`) keeps its size, since a new size would
 * move its start.
 */
function sized(page: URL, wanted: number): URL {
  if (page.searchParams.has('page') || !page.searchParams.has('limit')) return page;
  const limit = String(Math.min(MAX_PAGE_SIZE, Math.max(1, wanted)));
  if (page.searchParams.get('limit') === limit) return page;
  const url = new URL(page);
  url.searchParams.set('limit', limit);
  return url;
}

/** A page whatever size was asked of it: a link back to a page read before, at any size, is a loop. */
function pageKey(page: URL): string {
  if (!page.searchParams.has('limit')) return page.href;
  const url = new URL(page);
  url.searchParams.delete('limit');
  return url.href;
}

function pathOf(url: URL): string {
  return `${url.pathname}${url.search}`;
}

/** A cursor's page against the base URL; one the URL parser refuses resolves to nothing acceptable. */
function resolve(path: string, base: URL): URL {
  try {
    return new URL(path, base);
  } catch {
    return new URL('invalid:');
  }
}
