/**
 * What lookups learn from list pages: every pet a key's list pages carried, and when a scan of that
 * key last read every page. A lookup of a pet seen within PETSTORE_CACHE_TTL costs no upstream
 * request, nor does one of an id a complete scan within it did not find (it is null); within
 * PETSTORE_STALE_TTL a pet seen stands in for a lookup that fails for want of budget or of the
 * upstream, but an absence never does: a stale null would deny a pet created since, and could not
 * be marked stale.
 *
 * Per key, never across keys. Read your writes (docs/architecture.md): what is learned is held under
 * the key's write generation its pages were asked under (upstream/sharing/answers.ts), and recalled
 * only while the key's generation is still that one. A createPet, here or on another replica on the
 * same Redis, gives the key a new generation, and everything learned before it is forgotten.
 *
 * Bounded in bytes (a quarter of PETSTORE_CACHE_SIZE): the least recently used key's pets go first;
 * a pet larger than an eighth of the budget is not kept.
 */

import { stringBytes } from '../../shared/bytes.js';
import type { Generation } from '../../upstream/response.js';
import type { PetModel } from '../models.js';

export interface Recalled {
  /** The pet, or null when a complete scan did not find it. */
  readonly pet: PetModel | null;
  /** Epoch ms when the upstream said so. */
  readonly at: number;
}

export interface PetMemory {
  /** The pets of a list page the upstream answered at `at`, asked for under `generation`. */
  remember(keyId: string, pets: readonly PetModel[], at: number, generation: Generation): void;
  /** A scan that started at `at` read every page, all under `generation`: what it did not find did not exist then. */
  rememberComplete(keyId: string, at: number, generation: Generation): void;
  /** Whether anything is held for the key: only then is its generation worth asking for. */
  holds(keyId: string): boolean;
  /**
   * What is known of `id` no older than `maxAgeMs`, while the key's generation is `generation`;
   * an absence only when `absent` says it may stand.
   */
  recall(
    keyId: string,
    id: string,
    now: number,
    maxAgeMs: number,
    generation: Generation,
    absent: boolean,
  ): Recalled | undefined;
  /** Bytes held now, as counted. */
  readonly bytes: number;
}

export interface PetMemoryOptions {
  /** Bytes the pets may hold together (default 8 MiB). */
  readonly maxBytes?: number;
  readonly maxPetsPerKey?: number;
  readonly maxKeys?: number;
}

interface Seen {
  readonly pet: PetModel;
  readonly at: number;
  readonly bytes: number;
}

interface KeyMemory {
  readonly generation: Generation;
  readonly pets: Map<string, Seen>;
  completeAt: number;
}

/** The Seen and PetModel objects and the Map slot (64-bit V8). */
const PET_OVERHEAD = 160;

function petBytes(pet: PetModel): number {
  const status = pet.status === undefined ? 0 : stringBytes(pet.status);
  return PET_OVERHEAD + stringBytes(pet.id) + stringBytes(pet.name) + stringBytes(pet.categoryId) + status;
}

export function createPetMemory(options: PetMemoryOptions = {}): PetMemory {
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const maxPetBytes = maxBytes / 8;
  const maxPets = options.maxPetsPerKey ?? 10_000;
  const maxKeys = options.maxKeys ?? 1_000;
  // Most recently used last, so the least recently used key goes first.
  const keys = new Map<string, KeyMemory>();
  let bytes = 0;

  function forget(keyId: string): void {
    const memory = keys.get(keyId);
    if (memory === undefined) return;
    keys.delete(keyId);
    for (const seen of memory.pets.values()) bytes -= seen.bytes;
  }

  function forgetPet(memory: KeyMemory, id: string): void {
    const seen = memory.pets.get(id);
    if (seen === undefined) return;
    memory.pets.delete(id);
    bytes -= seen.bytes;
  }

  /** The key's memory under `generation`: one under another generation is from before or after a write, and goes. */
  function memoryOf(keyId: string, generation: Generation): KeyMemory {
    let memory = keys.get(keyId);
    if (memory !== undefined && memory.generation !== generation) {
      forget(keyId);
      memory = undefined;
    }
    if (memory === undefined) {
      if (keys.size >= maxKeys) forget(keys.keys().next().value as string);
      memory = { generation, pets: new Map(), completeAt: 0 };
    } else keys.delete(keyId);
    keys.set(keyId, memory);
    return memory;
  }

  /** Past the budget: the least recently used keys go, then the oldest pets of `current`. */
  function shrink(current: KeyMemory): void {
    while (bytes > maxBytes) {
      const [oldestKey, oldest] = keys.entries().next().value as [string, KeyMemory];
      if (oldest !== current) forget(oldestKey);
      else if (current.pets.size > 0) forgetPet(current, current.pets.keys().next().value as string);
      else return;
    }
  }

  return {
    get bytes() {
      return bytes;
    },
    remember(keyId, pets, at, generation) {
      if (pets.length === 0) return;
      const memory = memoryOf(keyId, generation);
      for (const pet of pets) {
        forgetPet(memory, pet.id);
        const cost = petBytes(pet);
        if (cost > maxPetBytes) continue;
        memory.pets.set(pet.id, { pet, at, bytes: cost });
        bytes += cost;
        if (memory.pets.size > maxPets) forgetPet(memory, memory.pets.keys().next().value as string);
      }
      shrink(memory);
    },
    rememberComplete(keyId, at, generation) {
      memoryOf(keyId, generation).completeAt = at;
    },
    holds(keyId) {
      return keys.has(keyId);
    },
    recall(keyId, id, now, maxAgeMs, generation, absent) {
      const memory = keys.get(keyId);
      if (memory === undefined) return undefined;
      if (memory.generation !== generation) {
        // The key wrote since (or Redis, which holds its generation, was flushed): all of it is out of date.
        forget(keyId);
        return undefined;
      }
      const seen = memory.pets.get(id);
      if (seen !== undefined && now - seen.at <= maxAgeMs) return seen;
      // A complete scan found every pet there was; a pet remembered from before it is gone is not.
      if (
        absent &&
        memory.completeAt > 0 &&
        now - memory.completeAt <= maxAgeMs &&
        (seen === undefined || seen.at < memory.completeAt)
      ) {
        return { pet: null, at: memory.completeAt };
      }
      return undefined;
    },
  };
}
