/**
 * The pets connection's PageInfo as Relay's connection spec asks for it, against the reference store
 * on port 0: startCursor and endCursor are the first and last edges' cursors (null on an empty
 * page), and, paging being forward only, hasPreviousPage says whether the page starts after a cursor.
 */

import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Pet } from '../../../src/petstore/store.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

const SEED: readonly Pet[] = Array.from({ length: 7 }, (_, i) => ({
  id: BigInt(i + 1),
  name: `Pet ${i + 1}`,
  categoryId: 1n,
  status: i === 6 ? 'sold' : 'available',
}));

interface Page {
  edges: { cursor: string; node: { id: string } }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

const PAGE = `query Page($first: Int, $after: String, $status: PetStatus) {
  pets(first: $first, after: $after, status: $status) {
    edges { cursor node { id } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ store: { seed: SEED } });
});
afterAll(() => stack.close());

async function page(variables: Record<string, unknown>): Promise<Page> {
  const response = await stack.query<{ pets: Page }>(PAGE, { variables });
  expect(response.body.errors).toBeUndefined();
  return response.body.data?.pets as Page;
}

const ids = (result: Page) => result.edges.map((edge) => edge.node.id);

it('gives a first page hasPreviousPage false, and the first and last edges’ cursors as startCursor and endCursor', async () => {
  const first = await page({ first: 3 });
  expect(ids(first)).toEqual(['1', '2', '3']);
  expect(first.pageInfo).toEqual({
    hasNextPage: true,
    hasPreviousPage: false,
    startCursor: first.edges[0]?.cursor,
    endCursor: first.edges[2]?.cursor,
  });
});

it('gives a page after a cursor hasPreviousPage true, and its startCursor continues after its first pet', async () => {
  const first = await page({ first: 3 });
  const second = await page({ first: 3, after: first.pageInfo.endCursor });
  expect(ids(second)).toEqual(['4', '5', '6']);
  expect(second.pageInfo).toEqual({
    hasNextPage: true,
    hasPreviousPage: true,
    startCursor: second.edges[0]?.cursor,
    endCursor: second.edges[2]?.cursor,
  });
  expect(ids(await page({ first: 2, after: second.pageInfo.startCursor }))).toEqual(['5', '6']);
});

it('gives an empty page after the last pet null cursors, hasPreviousPage true and hasNextPage false', async () => {
  const all = await page({ first: 100 });
  expect(all.pageInfo.hasPreviousPage).toBe(false);
  const after = await page({ first: 5, after: all.pageInfo.endCursor });
  expect(after).toEqual({
    edges: [],
    pageInfo: { hasNextPage: false, hasPreviousPage: true, startCursor: null, endCursor: null },
  });
});

it('gives an empty first page (a status no pet has) null cursors and hasPreviousPage false', async () => {
  expect(await page({ first: 5, status: 'PENDING' })).toEqual({
    edges: [],
    pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
  });
});

it('seals the same cursors when pageInfo is asked for without the edges, with one upstream request', async () => {
  const withEdges = await page({ first: 4, status: 'AVAILABLE' });
  stack.requests.length = 0;
  const response = await stack.query<{ pets: Pick<Page, 'pageInfo'> }>(
    '{ pets(first: 4, status: AVAILABLE) { pageInfo { startCursor endCursor hasPreviousPage } } }',
  );
  expect(response.body.data?.pets.pageInfo).toEqual({
    startCursor: withEdges.pageInfo.startCursor,
    endCursor: withEdges.pageInfo.endCursor,
    hasPreviousPage: false,
  });
  expect(stack.count()).toBe(1);
});
