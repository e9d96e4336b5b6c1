/**
 * The `pets` connection over upstream pages. Pages are found only through `Link: rel="next"`, so a
 * cursor names an upstream page (path and query) and how many of its pets were already returned.
 */

import type { GatewayContext } from './context.js';
import { badUserInput } from './errors.js';
import { decodeCursor, encodeCursor } from './ids.js';
import type { PetConnectionModel, PetEdgeModel } from './models.js';
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
    const { pets, next } = await client.listPets(context.key, page);
    for (const pet of pets) context.petLoader.prime(pet.id, pet);

    const taken = pets.slice(offset, offset + args.first - edges.length);
    taken.forEach((pet, i) => {
      const consumed = offset + i + 1;
      // The last pet of a page points at the next page, so continuing costs no re-read of this one.
      const position =
        consumed === pets.length && next !== undefined
          ? { page: pathOf(next), offset: 0 }
          : { page: pathOf(page), offset: consumed };
      edges.push({ cursor: encodeCursor({ ...position, status: args.status }), node: pet });
    });
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
