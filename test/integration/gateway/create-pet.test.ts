/**
 * createPet end to end over real HTTP, in front of the reference Pet Store on port 0: statuses both
 * ways, int64 category ids exact above 2^53, names counted in characters, and ids the store hands out.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type Connection,
  CREATE,
  ENUM,
  type GqlPet,
  PET,
  PETS,
  REST_STATUSES,
  SEED,
  TWO_53,
} from '../../helpers/seeded-pets.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';

describe('createPet', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ store: { seed: SEED.slice(0, 3) } });
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.requests.length = 0;
  });

  async function create(input: Record<string, unknown>): Promise<GqlPet> {
    const response = await stack.query<{ createPet: { pet: GqlPet } }>(CREATE, { variables: { input } });
    expect(response.body.errors).toBeUndefined();
    return response.body.data?.createPet.pet as GqlPet;
  }

  it('creates a pet with status AVAILABLE when none is given, in one upstream request', async () => {
    const pet = await create({ name: 'Rex', categoryId: '4' });
    expect(pet).toEqual({ id: '4', name: 'Rex', status: 'AVAILABLE', category: { id: '4' } });
    expect(stack.store.catalogue.get(4n)).toEqual({ id: 4n, name: 'Rex', categoryId: 4n, status: 'available' });
    expect(stack.requests).toEqual([
      expect.objectContaining({ operation: 'createPet', method: 'POST', key: TEST_KEY, status: 201 }),
    ]);
  });

  it.each(REST_STATUSES)('maps status %s to the REST value and back', async (status) => {
    const pet = await create({ name: `A ${status} pet`, categoryId: '1', status: ENUM[status] });
    expect(pet.status).toBe(ENUM[status]);
    expect(stack.store.catalogue.get(BigInt(pet.id))?.status).toBe(status);
  });

  it('stores categoryId 9223372036854775807 exactly and answers it exactly', async () => {
    const pet = await create({ name: 'Max category', categoryId: '9223372036854775807' });
    expect(pet.category).toEqual({ id: '9223372036854775807' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.categoryId).toBe(9223372036854775807n);
  });

  it('stores categoryId 2^53 + 1 exactly, not rounded to 2^53', async () => {
    const pet = await create({ name: 'Twin category', categoryId: '9007199254740993' });
    expect(pet.category).toEqual({ id: '9007199254740993' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.categoryId).toBe(9007199254740993n);
  });

  it('takes a categoryId with white space around it, trimmed', async () => {
    const pet = await create({ name: 'Spaced', categoryId: ' 12 ' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.categoryId).toBe(12n);
  });

  it('takes a name of 200 characters outside the BMP (counted as characters, not UTF-16 units)', async () => {
    const name = '🐶'.repeat(200);
    const pet = await create({ name, categoryId: '1' });
    expect(pet.name).toBe(name);
    expect(stack.store.catalogue.get(BigInt(pet.id))?.name).toBe(name);
  });

  it('keeps a name with quotes, backslashes and control characters exact', async () => {
    const name = 'Rex "the \\ dog"\n\t</script>';
    const pet = await create({ name, categoryId: '1' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.name).toBe(name);
  });

  it('lists a created pet afterwards', async () => {
    const pet = await create({ name: 'Listed', categoryId: '2', status: 'SOLD' });
    const response = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 100, status: 'SOLD' } });
    expect(response.body.data?.pets.nodes).toContainEqual(pet);
  });

  it('creates a pet under an id above 2^53 when the store hands one out', async () => {
    const big = await startStack({
      store: { seed: [{ id: TWO_53, name: 'Twin A', categoryId: 1n, status: 'available' }] },
    });
    try {
      const response = await big.query<{ createPet: { pet: GqlPet } }>(CREATE, {
        variables: { input: { name: 'Next', categoryId: '1' } },
      });
      expect(response.body.data?.createPet.pet.id).toBe('9007199254740993');
      const lookup = await big.query(PET, { variables: { id: '9007199254740993' } });
      expect(lookup.body.data?.pet?.name).toBe('Next');
    } finally {
      await big.close();
    }
  });
});
