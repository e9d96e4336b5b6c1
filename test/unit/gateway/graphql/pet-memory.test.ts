/**
 * What lookups learn from list pages, on its own: held under the key's write generation and
 * recalled only under it, an absence never as a stand-in, and bounded in bytes.
 */

import { describe, expect, it } from 'vitest';
import { createPetMemory } from '../../../../src/gateway/graphql/loaders/pet-memory.js';
import type { PetModel } from '../../../../src/gateway/graphql/models.js';

const pet = (id: number, name = `Pet ${id}`): PetModel => ({
  id: String(id),
  name,
  categoryId: '1',
  status: 'available',
});
const pets = (from: number, count: number) => Array.from({ length: count }, (_, i) => pet(from + i));

describe('pet memory', () => {
  it('recalls a pet, and an absence after a complete scan, only under the generation it learned them', () => {
    const memory = createPetMemory();
    memory.remember('k', pets(1, 3), 1_000, 'g1');
    memory.rememberComplete('k', 1_000, 'g1');
    expect(memory.recall('k', '2', 1_500, 60_000, 'g1', true)?.pet).toEqual(pet(2));
    expect(memory.recall('k', '99', 1_500, 60_000, 'g1', true)).toEqual({ pet: null, at: 1_000 });
    // The key wrote (here or on another replica): everything learned before is forgotten.
    expect(memory.recall('k', '99', 1_500, 60_000, 'g2', true)).toBeUndefined();
    expect(memory.holds('k')).toBe(false);
    expect(memory.recall('k', '2', 1_500, 60_000, 'g1', true)).toBeUndefined();
    expect(memory.bytes).toBe(0);
  });

  it('never lets an absence stand in, and forgets what is older than asked', () => {
    const memory = createPetMemory();
    memory.remember('k', pets(1, 3), 1_000, 0);
    memory.rememberComplete('k', 1_000, 0);
    expect(memory.recall('k', '99', 1_500, 60_000, 0, false)).toBeUndefined();
    expect(memory.recall('k', '1', 1_500, 60_000, 0, false)?.pet).toEqual(pet(1));
    expect(memory.recall('k', '1', 70_000, 60_000, 0, true)).toBeUndefined();
  });

  it('learns a page of a new generation in place of what it held under the old one', () => {
    const memory = createPetMemory();
    memory.remember('k', pets(1, 3), 1_000, 'g1');
    memory.remember('k', pets(10, 1), 2_000, 'g2');
    expect(memory.recall('k', '1', 2_500, 60_000, 'g2', true)).toBeUndefined();
    expect(memory.recall('k', '10', 2_500, 60_000, 'g2', true)?.pet).toEqual(pet(10));
  });

  it('holds no more bytes than its budget, the least recently used key first, and no pet over an eighth of it', () => {
    const memory = createPetMemory({ maxBytes: 256 * 1024 });
    memory.remember('old', pets(1, 400), 1_000, 0);
    memory.remember('new', pets(1, 400), 1_000, 0);
    memory.remember('newest', pets(1, 400), 1_000, 0);
    expect(memory.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(memory.holds('old')).toBe(false);
    expect(memory.recall('newest', '400', 1_000, 60_000, 0, true)).toBeDefined();
    // 40,000 characters are over an eighth of 256 KiB at two bytes each.
    memory.remember('newest', [pet(7, 'é'.repeat(40_000))], 1_000, 0);
    expect(memory.recall('newest', '7', 1_000, 60_000, 0, true)).toBeUndefined();
    // One key alone past the budget keeps its newest pets.
    memory.remember('newest', pets(1_000, 2_000), 1_000, 0);
    expect(memory.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(memory.recall('newest', '2999', 1_000, 60_000, 0, true)).toBeDefined();
    expect(memory.recall('newest', '1000', 1_000, 60_000, 0, true)).toBeUndefined();
  });
});
