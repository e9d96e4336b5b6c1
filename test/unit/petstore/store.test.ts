import { describe, expect, it } from 'vitest';
import { INT64_MAX } from '../../../src/int64.js';
import { type Pet, PetCatalogue, type PetStatus } from '../../../src/petstore/store.js';

function pet(id: bigint, status: PetStatus = 'available'): Pet {
  return { id, name: `Pet ${id}`, categoryId: 1n, status };
}

function ids(pets: readonly Pet[]): bigint[] {
  return pets.map((p) => p.id);
}

describe('PetCatalogue', () => {
  it('keeps seeded pets in id order whatever the seed order', () => {
    const catalogue = new PetCatalogue([pet(5n), pet(INT64_MAX), pet(1n), pet(9007199254740993n), pet(3n)]);
    expect(catalogue.size).toBe(5);
    expect(ids(catalogue.page({ limit: 100 }).pets)).toEqual([1n, 3n, 5n, 9007199254740993n, INT64_MAX]);
  });

  it('refuses a seed with a duplicate id', () => {
    expect(() => new PetCatalogue([pet(1n), pet(2n), pet(1n)])).toThrow('duplicate pet id 1');
  });

  it('gets a pet by exact id', () => {
    const catalogue = new PetCatalogue([pet(1n), pet(9007199254740993n)]);
    expect(catalogue.get(9007199254740993n)).toEqual(pet(9007199254740993n));
    expect(catalogue.get(9007199254740992n)).toBeUndefined();
    expect(catalogue.get(0n)).toBeUndefined();
    expect(catalogue.get(2n)).toBeUndefined();
    expect(new PetCatalogue().get(1n)).toBeUndefined();
  });

  describe('page', () => {
    const catalogue = new PetCatalogue(
      Array.from({ length: 10 }, (_, i) => pet(BigInt(i + 1), i % 2 === 0 ? 'available' : 'sold')),
    );

    it('returns at most `limit` pets and says whether more follow', () => {
      expect(catalogue.page({ limit: 3 })).toEqual({ pets: [pet(1n), pet(2n, 'sold'), pet(3n)], hasMore: true });
      expect(catalogue.page({ limit: 10 }).hasMore).toBe(false);
      expect(catalogue.page({ limit: 9 }).hasMore).toBe(true);
    });

    it('starts after the `after` id, existing or not', () => {
      expect(ids(catalogue.page({ limit: 3, after: 4n }).pets)).toEqual([5n, 6n, 7n]);
      expect(ids(catalogue.page({ limit: 3, after: -100n }).pets)).toEqual([1n, 2n, 3n]);
      expect(catalogue.page({ limit: 3, after: 7n })).toEqual({
        pets: [pet(8n, 'sold'), pet(9n), pet(10n, 'sold')],
        hasMore: false,
      });
      expect(catalogue.page({ limit: 3, after: 10n })).toEqual({ pets: [], hasMore: false });
      expect(catalogue.page({ limit: 3, after: INT64_MAX })).toEqual({ pets: [], hasMore: false });
    });

    it('filters by status, and has no more when only other statuses follow', () => {
      expect(ids(catalogue.page({ limit: 3, status: 'sold' }).pets)).toEqual([2n, 4n, 6n]);
      expect(catalogue.page({ limit: 2, status: 'available', after: 5n })).toEqual({
        pets: [pet(7n), pet(9n)],
        hasMore: false,
      });
      expect(catalogue.page({ limit: 5, status: 'pending' })).toEqual({ pets: [], hasMore: false });
    });

    it('visits every pet exactly once when paging by the last id', () => {
      const seen: bigint[] = [];
      let after: bigint | undefined;
      for (;;) {
        const page = catalogue.page({ limit: 4, after });
        seen.push(...ids(page.pets));
        if (!page.hasMore) break;
        after = page.pets.at(-1)?.id;
      }
      expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i + 1)));
    });
  });

  describe('add', () => {
    it('assigns 1 in an empty catalogue, then one above the largest id', () => {
      const catalogue = new PetCatalogue();
      expect(catalogue.add({ name: 'A', categoryId: 1n, status: 'available' })).toEqual({
        id: 1n,
        name: 'A',
        categoryId: 1n,
        status: 'available',
      });
      const withGap = new PetCatalogue([pet(1n), pet(9007199254740993n)]);
      expect(withGap.add({ name: 'B', categoryId: 2n, status: 'sold' }).id).toBe(9007199254740994n);
      expect(withGap.get(9007199254740994n)?.name).toBe('B');
      expect(withGap.size).toBe(3);
    });

    it('falls back to the smallest free positive id once the largest int64 is taken', () => {
      const catalogue = new PetCatalogue([pet(1n), pet(2n), pet(4n), pet(INT64_MAX)]);
      const newPet = { name: 'C', categoryId: 1n, status: 'pending' } as const;
      expect(catalogue.add(newPet).id).toBe(3n);
      expect(catalogue.add(newPet).id).toBe(5n);
      expect(new PetCatalogue([pet(INT64_MAX)]).add(newPet).id).toBe(1n);
    });

    it('returns a frozen pet', () => {
      const added = new PetCatalogue().add({ name: 'D', categoryId: 1n, status: 'available' });
      expect(Object.isFrozen(added)).toBe(true);
    });
  });
});
