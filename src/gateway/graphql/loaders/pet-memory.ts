/**
 * What lookups learn from list pages: every pet a key's list pages carried, and when a scan of that
 * key last read every page. A lookup of a pet seen within PETSTORE_CACHE_TTL costs no upstream
 * request, nor does one of an id a complete scan within it did not find (it is null); within
 * PETSTORE_STALE_TTL they stand in for a lookup that fails for want of budget or of the upstream.
 * Per key, never across keys; a key's createPet makes it forget, so a client never reads a world
 * from before its own write. Bounded: pets per key, and keys.
 */

import type { PetModel } from '../models.js';

export interface Recalled {
  /** The pet, or null when a complete scan did not find it. */
  readonly pet: PetModel | null;
  /** Epoch ms when the upstream said so. */
  readonly at: number;
}

export interface PetMemory {
  /** The pets of a list page the upstream answered at `at`. */
  remember(keyId: string, pets: readonly PetModel[], at: number): void;
  /** A scan that started at `at` read every page: what it did not find did not exist then. */
  rememberComplete(keyId: string, at: number): void;
  /** What is known of `id` no older than `maxAgeMs`, or undefined. */
  recall(keyId: string, id: string, now: number, maxAgeMs: number): Recalled | undefined;
  forget(keyId: string): void;
}

interface KeyMemory {
  readonly pets: Map<string, { readonly pet: PetModel; readonly at: number }>;
  completeAt: number;
}

export function createPetMemory(
  options: { readonly maxPetsPerKey?: number; readonly maxKeys?: number } = {},
): PetMemory {
  const maxPets = options.maxPetsPerKey ?? 10_000;
  const maxKeys = options.maxKeys ?? 1_000;
  const keys = new Map<string, KeyMemory>();

  function memoryOf(keyId: string): KeyMemory {
    let memory = keys.get(keyId);
    if (memory === undefined) {
      if (keys.size >= maxKeys) keys.delete(keys.keys().next().value as string);
      memory = { pets: new Map(), completeAt: 0 };
    } else keys.delete(keyId);
    // Most recently used last, so the least recently used key goes first.
    keys.set(keyId, memory);
    return memory;
  }

  return {
    remember(keyId, pets, at) {
      if (pets.length === 0) return;
      const memory = memoryOf(keyId);
      for (const pet of pets) {
        memory.pets.delete(pet.id);
        memory.pets.set(pet.id, { pet, at });
        if (memory.pets.size > maxPets) memory.pets.delete(memory.pets.keys().next().value as string);
      }
    },
    rememberComplete(keyId, at) {
      memoryOf(keyId).completeAt = at;
    },
    recall(keyId, id, now, maxAgeMs) {
      const memory = keys.get(keyId);
      if (memory === undefined) return undefined;
      const seen = memory.pets.get(id);
      if (seen !== undefined && now - seen.at <= maxAgeMs) return seen;
      // A complete scan found every pet there was; a pet remembered from before it is gone is not.
      if (
        memory.completeAt > 0 &&
        now - memory.completeAt <= maxAgeMs &&
        (seen === undefined || seen.at < memory.completeAt)
      ) {
        return { pet: null, at: memory.completeAt };
      }
      return undefined;
    },
    forget(keyId) {
      keys.delete(keyId);
    },
  };
}
