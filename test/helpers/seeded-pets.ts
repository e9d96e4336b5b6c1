/**
 * The catalogue the gateway's schema tests seed the reference store with (22 small ids, then three
 * above 2^53), the operations they send, and the assertions they share. Nothing here is faked: these
 * are values and checks, for tests that run the real store and gateway (test/helpers/start-stack.ts).
 */

import { expect } from 'vitest';
import type { Pet, PetStatus } from '../../src/petstore/store.js';
import { errorCodes, type GqlResponse } from './gql.js';
import { STATUSES, seedPets } from './seeded-store.js';
import type { Stack } from './start-stack.js';
import { type GqlPet, walkPets } from './walk-pets.js';

export type { Connection, GqlPet } from './walk-pets.js';

export const REST_STATUSES: readonly PetStatus[] = STATUSES;
export const ENUM = { available: 'AVAILABLE', pending: 'PENDING', sold: 'SOLD' } as const;
export type EnumStatus = (typeof ENUM)[PetStatus];

/** 2^53 and 2^53 + 1: one double, two pets. */
export const TWO_53 = 9007199254740992n;
export const TWO_53_PLUS_1 = 9007199254740993n;
export const INT64_MAX = 9223372036854775807n;

/** 22 small ids with cycling statuses, then three ids above 2^53: 25 pets, a count few page sizes divide. */
export const SEED: readonly Pet[] = [
  ...seedPets(22),
  { id: TWO_53, name: 'Twin A', categoryId: 9007199254740995n, status: 'pending' },
  { id: TWO_53_PLUS_1, name: 'Twin B', categoryId: INT64_MAX, status: 'sold' },
  { id: INT64_MAX, name: 'Max', categoryId: 1n, status: 'available' },
];

/** Pets 1..count, all available in category 1: a catalogue whose pages of 100 a test can count. */
export function availablePets(count: number): Pet[] {
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: 1n,
    status: 'available' as const,
  }));
}

export const PET_FIELDS = 'id name status category { id }';

export const PETS = `query Pets($first: Int, $after: String, $status: PetStatus) {
  pets(first: $first, after: $after, status: $status) {
    edges { cursor node { ${PET_FIELDS} } }
    nodes { ${PET_FIELDS} }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const PET = `query Pet($id: ID!) { pet(id: $id) { ${PET_FIELDS} } }`;

export const CREATE = `mutation Create($input: CreatePetInput!) { createPet(input: $input) { pet { ${PET_FIELDS} } } }`;

/** A seeded pet as the gateway shows it. */
export function gqlPet(pet: Pet): GqlPet {
  return { id: String(pet.id), name: pet.name, status: ENUM[pet.status], category: { id: String(pet.categoryId) } };
}

export function seeded(status?: PetStatus): GqlPet[] {
  return SEED.filter((pet) => status === undefined || pet.status === status).map(gqlPet);
}

export function seedPet(id: bigint): Pet {
  const pet = SEED.find((candidate) => candidate.id === id);
  if (pet === undefined) throw new Error(`no seeded pet ${id}`);
  return pet;
}

/** The one error of a response, asserted to carry `code`. */
export function onlyError(
  response: GqlResponse<unknown>,
  code: string,
): NonNullable<GqlResponse['body']['errors']>[number] {
  expect(errorCodes(response)).toEqual([code]);
  return response.body.errors?.[0] as NonNullable<GqlResponse['body']['errors']>[number];
}

/** Asserts a response without errors whose data is `data` (extensions such as rateLimit may come along). */
export function expectData(response: GqlResponse<unknown>, data: unknown): void {
  expect(response.body.errors).toBeUndefined();
  expect(response.body.data).toEqual(data);
}

/** A cursor as a client could forge it: base64url JSON (the gateway's are sealed, so these never pass). */
export function forgeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The stack's cursor secret, so a test can seal a cursor as the gateway would (as if the secret leaked). */
export const CURSOR_SECRET = 'gateway-pets test cursor secret';

export interface Walk {
  ids: string[];
  pages: number;
  pets: GqlPet[];
}

/** Follows endCursor from the first page to the last, checking each page's shape on the way. */
export async function walk(
  query: Stack['query'],
  first: number,
  status?: EnumStatus,
  options: { key?: string } = {},
): Promise<Walk> {
  const { pets, pages } = await walkPets(query, first, status, options);
  return { ids: pets.map((pet) => pet.id), pages, pets };
}
