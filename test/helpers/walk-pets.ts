/** Follows a `pets` connection from its first page to its last, checking each page's shape on the way. */

import { expect } from 'vitest';
import type { GqlOptions, GqlResponse } from './gql.js';

export interface GqlPet {
  id: string;
  name: string;
  status: string | null;
  category: { id: string };
}

export interface Connection {
  edges: { cursor: string; node: GqlPet }[];
  nodes: GqlPet[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export const PETS_CONNECTION = `query Pets($first: Int, $after: String, $status: PetStatus) {
  pets(first: $first, after: $after, status: $status) {
    edges { cursor node { id name status category { id } } }
    nodes { id name status category { id } }
    pageInfo { hasNextPage endCursor }
  }
}`;

type Query = <T>(query: string, options?: GqlOptions) => Promise<GqlResponse<T>>;

export async function walkPets(
  query: Query,
  first: number,
  status?: string,
  options: { key?: string; maxPages?: number } = {},
): Promise<{ pets: GqlPet[]; pages: number }> {
  const pets: GqlPet[] = [];
  let after: string | null = null;
  let pages = 0;
  for (;;) {
    const response: GqlResponse<{ pets: Connection }> = await query<{ pets: Connection }>(PETS_CONNECTION, {
      variables: { first, after, status },
      ...(options.key ? { key: options.key } : {}),
    });
    expect(response.body.errors).toBeUndefined();
    const connection = response.body.data?.pets as Connection;
    pages++;
    expect(connection.nodes).toEqual(connection.edges.map((edge) => edge.node));
    expect(connection.pageInfo.endCursor).toBe(connection.edges.at(-1)?.cursor ?? null);
    pets.push(...connection.nodes);
    if (!connection.pageInfo.hasNextPage) break;
    expect(connection.edges).toHaveLength(first);
    after = connection.pageInfo.endCursor;
    expect(pages).toBeLessThan(options.maxPages ?? 100);
  }
  return { pets, pages };
}
