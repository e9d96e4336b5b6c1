/**
 * How the gateway answers pet(id:) batches against the reference Pet Store on port 0: one scan of
 * the list for many ids, a new loader per request, and the PET_LOOKUP strategies (list, legacy,
 * auto) with the deprecated getPet's sunset date, read from a clock the test sets.
 */

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Pet } from '../../../src/petstore/store.js';
import { availablePets, expectData, PET, TWO_53_PLUS_1 } from '../../helpers/seeded-pets.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

describe('pet lookup batches', () => {
  const CATALOGUE: Pet[] = [
    ...availablePets(250),
    { id: TWO_53_PLUS_1, name: 'Twin B', categoryId: 2n, status: 'sold' },
  ];
  const FULL_SCAN = Math.ceil(CATALOGUE.length / 100);
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ store: { seed: CATALOGUE } });
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.requests.length = 0;
  });

  function aliased(ids: readonly string[]): string {
    return `{ ${ids.map((id, i) => `p${i}: pet(id: "${id}") { id name }`).join(' ')} }`;
  }

  it('serves 50 aliased pet(id:) fields with no deprecated getPet call and at most one scan of the catalogue', async () => {
    const present = Array.from({ length: 48 }, (_, i) => String((i + 1) * 5));
    const ids = [...present, String(TWO_53_PLUS_1), '999999'];
    expect(ids).toHaveLength(50);
    const response = await stack.query(aliased(ids));
    expect(response.body.errors).toBeUndefined();
    const data = response.body.data as Record<string, { id: string; name: string } | null>;
    for (const [i, id] of present.entries()) expect(data[`p${i}`]).toEqual({ id, name: `Pet ${id}` });
    expect(data.p48).toEqual({ id: '9007199254740993', name: 'Twin B' });
    expect(data.p49).toBeNull();
    expect(stack.count('getPet')).toBe(0);
    // The absent id makes the scan read to the last page: exactly one pass over the catalogue.
    expect(stack.count('listPets')).toBe(FULL_SCAN);
  });

  it('stops scanning as soon as every id of the batch is found', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => String(i + 1));
    const response = await stack.query(aliased(ids));
    expect(Object.values(response.body.data ?? {}).map((pet: any) => pet.id)).toEqual(ids);
    expect(stack.count('getPet')).toBe(0);
    expect(stack.count('listPets')).toBe(1);
  });

  it('answers null for an absent id', async () => {
    const response = await stack.query(PET, { variables: { id: '251' } });
    expectData(response, { pet: null });
    expect(stack.count()).toBeLessThanOrEqual(FULL_SCAN);
  });

  it('uses a new loader for each request: the same lookup twice asks the upstream twice', async () => {
    await stack.query(PET, { variables: { id: '1' } });
    const first = stack.count();
    await stack.query(PET, { variables: { id: '1' } });
    expect(first).toBeGreaterThan(0);
    expect(stack.count()).toBe(2 * first);
  });
});

describe('PET_LOOKUP strategies and the sunset date', () => {
  const CATALOGUE: Pet[] = availablePets(150);
  let stack: Stack | undefined;

  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('list: an absent id is answered null after a scan of every page, never by getPet', async () => {
    stack = await startStack({ store: { seed: CATALOGUE }, env: { PET_LOOKUP: 'list' } });
    const response = await stack.query(PET, { variables: { id: '151' } });
    expectData(response, { pet: null });
    expect(stack.count('listPets')).toBe(2);
    expect(stack.count('getPet')).toBe(0);
  });

  it('legacy: one deprecated getPet per id, and a 404 is null', async () => {
    stack = await startStack({ store: { seed: CATALOGUE }, env: { PET_LOOKUP: 'legacy' } });
    const response = await stack.query('{ a: pet(id: "5") { name } b: pet(id: "151") { name } }');
    expectData(response, { a: { name: 'Pet 5' }, b: null });
    expect(stack.count('getPet')).toBe(2);
    expect(stack.count('listPets')).toBe(0);
  });

  it('auto: once a full scan took more pages than a batch has ids, the batch uses getPet', async () => {
    stack = await startStack({ store: { seed: CATALOGUE } });
    // A batch of two scans (one id would use getPet while the scan length is unknown: its cost is sure).
    await stack.query('{ a: pet(id: "151") { id } b: pet(id: "152") { id } }');
    expect(stack.count('listPets')).toBe(2);
    stack.requests.length = 0;
    const response = await stack.query(PET, { variables: { id: '140' } });
    expectData(response, { pet: { id: '140', name: 'Pet 140', status: 'AVAILABLE', category: { id: '1' } } });
    expect(stack.requests.map((record) => record.operation)).toEqual(['getPet']);
  });

  it.each(['legacy', 'auto'])('%s: never calls getPet on or after 5 December 2030', async (strategy) => {
    stack = await startStack({
      store: { seed: CATALOGUE },
      env: { PET_LOOKUP: strategy },
      gateway: { now: () => Date.UTC(2030, 11, 5) },
    });
    await stack.query(PET, { variables: { id: '151' } });
    const response = await stack.query(PET, { variables: { id: '140' } });
    expect(response.body.data?.pet?.name).toBe('Pet 140');
    expect(stack.count('getPet')).toBe(0);
  });
});
