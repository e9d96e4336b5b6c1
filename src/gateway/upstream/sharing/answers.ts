/**
 * Recent upstream answers (200s to GETs), per key and URL, kept for the cache and for serving stale
 * instead of an error. In process here, or shared by replicas through Redis (answers-redis.ts).
 *
 * Read your writes (docs/architecture.md, "Read your writes"): every key has a write generation, a token that a write
 * (createPet) replaces. Every answer is kept with the generation read before it was asked for, and
 * believed only while the key's generation is still that one, so a write fences every answer from
 * before it at once, on every replica that reads the same generation, without finding them. What
 * lookups learn from list pages (graphql/loaders/pet-memory.ts) is fenced the same way.
 *
 * Bounded in bytes (PETSTORE_CACHE_SIZE): what an answer costs is counted as V8 holds it, the oldest
 * answers go first, and an answer larger than an eighth of the budget is not kept at all: a few huge
 * pages would otherwise push out everything else, or, bounded only by count, the heap.
 */

import { stringBytes } from '../../shared/bytes.js';
import type { Generation, UpstreamResponse } from '../response.js';

export interface StoredAnswer {
  /** What readers need of the answer (status, body, Link), with the generation it was asked under. */
  readonly response: UpstreamResponse;
  /** Epoch ms when the upstream answered. */
  readonly at: number;
}

/** A key's generation now, and its answer to a URL when one is kept under that generation. */
export interface Recall {
  readonly stored: StoredAnswer | undefined;
  readonly generation: Generation;
}

export interface AnswerStore {
  /** Read before a request: the answer kept for it (if still good), and the generation to keep a new one under. */
  read(keyId: string, url: string): Promise<Recall>;
  /** The key's write generation now: anything remembered under another is from before a write. */
  generation(keyId: string): Promise<Generation>;
  /** Keeps `answer` for `ttlMs` under `generation`, the one read before it was asked for. */
  set(keyId: string, url: string, answer: StoredAnswer, ttlMs: number, generation: Generation): Promise<void>;
  /** After a write for the key: gives it a new generation, which fences everything kept for it. */
  invalidate(keyId: string): Promise<void>;
  close(): Promise<void>;
}

/** The budget's default: PETSTORE_CACHE_SIZE. */
export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;
/** An answer costing more than this share of the budget is not kept. */
export const LARGEST_SHARE = 1 / 8;
/** The entry, its response and headers objects, and its Map slot, on a 64-bit V8 (measured ~250). */
const ENTRY_OVERHEAD = 320;
/**
 * Keys whose generation is held. Past it, every key starts a new generation at once (`floor`): a
 * key's generation cannot be forgotten alone, or it would fall back to one its older answers carry.
 */
const MAX_GENERATIONS = 10_000;

/** What readers need of an upstream answer, and what it costs as kept: the body and the Link. */
export function keptAnswer(response: UpstreamResponse, generation: Generation): UpstreamResponse {
  const link = response.headers.link;
  return { status: response.status, headers: link === undefined ? {} : { link }, body: response.body, generation };
}

/** Bytes of heap an answer for `id` holds as kept (`keptAnswer`). */
export function answerBytes(id: string, response: UpstreamResponse): number {
  const link = response.headers.link;
  const linkBytes =
    link === undefined
      ? 0
      : typeof link === 'string'
        ? stringBytes(link)
        : link.reduce((n, l) => n + stringBytes(l), 0);
  return ENTRY_OVERHEAD + stringBytes(id) + stringBytes(response.body) + linkBytes;
}

export interface MemoryAnswersOptions {
  /** Bytes the kept answers may hold together (default 32 MiB). */
  readonly maxBytes?: number;
  readonly now?: () => number;
}

export interface MemoryAnswers extends AnswerStore {
  /** Bytes held now, as counted. */
  readonly bytes: number;
  /** Forgets every answer and starts every key on a new generation. */
  clear(): void;
}

interface Entry extends StoredAnswer {
  readonly expires: number;
  readonly bytes: number;
}

/** In process: bounded in bytes, the oldest answer dropped first. */
export function memoryAnswers(options: MemoryAnswersOptions = {}): MemoryAnswers {
  const maxBytes = options.maxBytes ?? DEFAULT_CACHE_BYTES;
  const maxEntryBytes = maxBytes * LARGEST_SHARE;
  const now = options.now ?? Date.now;
  // Insertion order is age: a renewed answer is deleted and set again, so the first entry is the oldest.
  const entries = new Map<string, Entry>();
  let bytes = 0;
  // Generations count up from one counter and are never reused, so a token read once names one time only.
  const generations = new Map<string, number>();
  let counter = 0;
  /** The generation of every key not in `generations`. */
  let floor = 0;

  const generationOf = (keyId: string): number => generations.get(keyId) ?? floor;

  function drop(id: string): void {
    const entry = entries.get(id);
    if (entry === undefined) return;
    entries.delete(id);
    bytes -= entry.bytes;
  }

  return {
    get bytes() {
      return bytes;
    },
    async read(keyId, url) {
      const generation = generationOf(keyId);
      const id = `${keyId} ${url}`;
      const entry = entries.get(id);
      if (entry === undefined) return { stored: undefined, generation };
      if (entry.expires > now() && entry.response.generation === generation) return { stored: entry, generation };
      drop(id);
      return { stored: undefined, generation };
    },
    async generation(keyId) {
      return generationOf(keyId);
    },
    async set(keyId, url, answer, ttlMs, generation) {
      // Asked for before a write the key has made since: the world before it.
      if (generationOf(keyId) !== generation) return;
      const id = `${keyId} ${url}`;
      drop(id);
      const cost = answerBytes(id, answer.response);
      if (cost > maxEntryBytes) return;
      const response = keptAnswer(answer.response, generation);
      entries.set(id, { response, at: answer.at, expires: now() + ttlMs, bytes: cost });
      bytes += cost;
      while (bytes > maxBytes) drop(entries.keys().next().value as string);
    },
    async invalidate(keyId) {
      generations.set(keyId, ++counter);
      if (generations.size > MAX_GENERATIONS) {
        generations.clear();
        floor = ++counter;
      }
    },
    clear() {
      entries.clear();
      bytes = 0;
      generations.clear();
      floor = ++counter;
    },
    async close() {
      entries.clear();
      bytes = 0;
    },
  };
}
