/** The pet store's catalogue: pets kept in id order, so an `after` cursor is a binary search. */

import { INT64_MAX } from '../int64.js';

export type PetStatus = 'available' | 'pending' | 'sold';
export const PET_STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold'];

export interface Pet {
  readonly id: bigint;
  readonly name: string;
  readonly categoryId: bigint;
  readonly status: PetStatus;
}

export type NewPet = Omit<Pet, 'id'>;

export interface PageQuery {
  readonly limit: number;
  readonly status?: PetStatus | undefined;
  /** Only pets with a larger id. */
  readonly after?: bigint | undefined;
}

export interface Page {
  readonly pets: readonly Pet[];
  /** True when more pets match after the last one returned. */
  readonly hasMore: boolean;
}

export class PetCatalogue {
  readonly #pets: Pet[] = [];

  constructor(seed: Iterable<Pet> = []) {
    for (const pet of seed) this.#insert(pet);
  }

  get size(): number {
    return this.#pets.length;
  }

  get(id: bigint): Pet | undefined {
    const index = this.#indexAfter(id - 1n);
    const pet = this.#pets[index];
    return pet?.id === id ? pet : undefined;
  }

  /** Adds a pet under the next id: one above the largest, as an auto-increment column would. */
  add(newPet: NewPet): Pet {
    const pet = Object.freeze({ ...newPet, id: this.#nextId() });
    this.#insert(pet);
    return pet;
  }

  page({ limit, status, after }: PageQuery): Page {
    const pets: Pet[] = [];
    const start = after === undefined ? 0 : this.#indexAfter(after);
    for (let i = start; i < this.#pets.length; i++) {
      const pet = this.#pets[i] as Pet;
      if (status !== undefined && pet.status !== status) continue;
      if (pets.length === limit) return { pets, hasMore: true };
      pets.push(pet);
    }
    return { pets, hasMore: false };
  }

  #nextId(): bigint {
    const last = this.#pets.at(-1);
    if (last === undefined) return 1n;
    if (last.id < INT64_MAX) return last.id + 1n;
    // The largest id is taken (a seed can do that): fall back to the smallest free positive id.
    let id = 1n;
    for (const pet of this.#pets) {
      if (pet.id < id) continue;
      if (pet.id !== id) break;
      id++;
    }
    return id;
  }

  #insert(pet: Pet): void {
    const index = this.#indexAfter(pet.id - 1n);
    if (this.#pets[index]?.id === pet.id) throw new Error(`duplicate pet id ${pet.id}`);
    this.#pets.splice(index, 0, pet);
  }

  /** Index of the first pet whose id is greater than `id`. */
  #indexAfter(id: bigint): number {
    let low = 0;
    let high = this.#pets.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#pets[middle] as Pet).id <= id) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
