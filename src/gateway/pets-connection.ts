/**
 * The `pets` connection over upstream pages. Pages are found only through `Link: rel="next"`, so a
 * cursor names an upstream page (path and query) and how many of its pets were already returned.
 */

import type { GatewayContext } from './context.js';
import { badUserInput } from './errors.js';
import { decodeCursor } from './ids.js';
import type { PetConnectionModel, PetEdgeModel, PetModel } from './models.js';
import { isPetsPageUrl } from './rest/link.js';

export interface PetsArguments {
  readonly first: number;
  readonly after: string | undefined;
  readonly status: string | undefined;
}

/** Upstream pages one `pets` field may read: an upstream that pages in smaller steps than `first` is followed, within reason. */
const MAX_PAGES = 10;

export async function fetchPetConnection(context: GatewayContext, args: PetsArguments): Promise<PetConnectionModel> {
  const { client } = context;
  let page = client.petsUrl({ limit: args.first, status: args.status });
  let offset = 0;
  if (args.after !== undefined) {
    const position = decodeCursor(args.after, (path) => isPetsPageUrl(resolve(path, client.baseUrl), client.baseUrl));
    if (position.status !== args.status) throw badUserInput('after belongs to a query with another status filter');
    page = new URL(position.page, client.baseUrl);
    offset = position.offset;
  }

  const edges: PetEdgeModel[] = [];
  for (let pages = 1; ; pages++) {
    // context.client primes the request's pet loader with every page it lists.
    const { pets, next } = await client.listPets(context.key, page);
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
    if (edges.length === args.first || restOfPage || next === undefined || pages === MAX_PAGES) {
      return { edges, hasNextPage: restOfPage || next !== undefined };
    }
    page = next;
    offset = 0;
  }
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
