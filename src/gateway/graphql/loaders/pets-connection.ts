/**
 * The `pets` connection over upstream pages. Pages are found only through `Link: rel="next"`, so a
 * cursor names an upstream page (path and query) and how many of its pets were already returned.
 * A field asks each page for as many pets as it still needs, reads at most one page per pet it
 * returns, and stops at a page it has read before, at an empty page, or at its operation's budget.
 */

import type { GraphQLResolveInfo } from 'graphql';
import { isPetsPageUrl } from '../../upstream/link.js';
import { canCharge } from '../../upstream/operation.js';
import { type GatewayContext, noteStale } from '../context.js';
import { badUserInput, upstreamUnavailable } from '../errors.js';
import type { CursorPosition } from '../ids.js';
import type { PetConnectionModel, PetModel } from '../models.js';

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

  /** The pets so far: while one page is taken whole, that page's own list (read, never written). */
  let nodes: readonly PetModel[] = [];
  let copied = false;
  const segments: Segment[] = [];
  // Pages read, by pageKey: made and named only once a link is to be followed, as most fields read one page.
  let read: Set<string> | undefined;
  /** The age of the oldest page served stale, if any was. */
  let oldest: number | undefined;
  const done = (hasNextPage: boolean): PetConnectionModel => {
    noteStale(context, path, oldest);
    return {
      nodes,
      hasNextPage,
      hasPreviousPage: args.after !== undefined,
      position: (index) => positionOf(segments, index, args.status),
    };
  };
  for (;;) {
    const count = nodes.length;
    page = sized(page, offset + args.first - count);
    // context.client keeps every page it lists for the request's pet loader.
    const { pets, next, staleMs } = await client.listPets(context.key, page);
    oldest = staleMs === undefined ? oldest : Math.max(oldest ?? 0, staleMs);
    const taken = Math.max(0, Math.min(pets.length - offset, args.first - count));
    segments.push({ page, next, start: count, offset, taken, size: pets.length });
    // The common field, one page taken whole, hands on the page's own list without a copy.
    if (count === 0 && taken === pets.length) nodes = pets;
    else {
      const own = copied ? (nodes as PetModel[]) : [...nodes];
      copied = true;
      for (let i = 0; i < taken; i++) own.push(pets[offset + i] as PetModel);
      nodes = own;
    }
    const restOfPage = offset + taken < pets.length;
    if (nodes.length === args.first || restOfPage || next === undefined) {
      return done(restOfPage || next !== undefined);
    }
    // An upstream that pages in circles, or links on from a page with nothing left to give.
    read ??= new Set<string>();
    read.add(pageKey(page));
    const looped = read.has(pageKey(next));
    if (looped || taken === 0) {
      if (nodes.length === 0) {
        throw upstreamUnavailable(
          `the Pet Store ${looped ? 'linked back to a page already read' : 'linked on from an empty page'}`,
        );
      }
      return done(!looped);
    }
    // Out of budget: what was read is a whole answer; the last cursor continues in another operation.
    if (!canCharge(context.operation)) return done(true);
    page = next;
    offset = 0;
    // A page answered from the cache resolves at once: let the event loop breathe between pages.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** One upstream page as the connection took it: `taken` of its `size` pets from `offset`, as `nodes[start…]`. */
interface Segment {
  readonly page: URL;
  readonly next: URL | undefined;
  readonly start: number;
  readonly offset: number;
  readonly taken: number;
  readonly size: number;
}

/**
 * Where the connection continues after `nodes[index]`: after that pet on its page, or, for the last
 * pet of a page that links on, at the start of the next page, so continuing costs no re-read.
 */
function positionOf(segments: readonly Segment[], index: number, status: string | undefined): CursorPosition {
  const segment = segments.find((s) => index >= s.start && index < s.start + s.taken);
  if (segment === undefined) throw new RangeError(`no pet at ${index} of this connection`);
  const consumed = segment.offset + (index - segment.start) + 1;
  return consumed === segment.size && segment.next !== undefined
    ? { page: pathOf(segment.next), offset: 0, status }
    : { page: pathOf(segment.page), offset: consumed, status };
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
