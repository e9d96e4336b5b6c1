/**
 * Recent upstream answers (200s to GETs), per key and URL, kept for the cache and for serving stale
 * instead of an error. In process here, or shared by replicas through Redis (answers-redis.ts). A
 * write for a key invalidates its entries everywhere at once: each entry carries the key's write
 * generation, and a write bumps it.
 */

import type { UpstreamResponse } from '../response.js';

export interface StoredAnswer {
  readonly response: UpstreamResponse;
  /** Epoch ms when the upstream answered. */
  readonly at: number;
}

export interface AnswerStore {
  get(keyId: string, url: string): Promise<StoredAnswer | undefined>;
  /** Keeps `answer` for `ttlMs`, unless the key wrote since `generation` was read. */
  set(keyId: string, url: string, answer: StoredAnswer, ttlMs: number, generation: number): Promise<void>;
  /** The key's write generation now: read before a request, passed to `set` with its answer. */
  generation(keyId: string): Promise<number>;
  /** After a write for the key: drops what is kept for it. */
  invalidate(keyId: string): Promise<void>;
  close(): Promise<void>;
}

/** In process: bounded, the oldest entry dropped first. */
export function memoryAnswers(maxEntries = 1_000, now: () => number = Date.now): AnswerStore {
  const entries = new Map<string, StoredAnswer & { readonly expires: number }>();
  const generations = new Map<string, number>();
  return {
    async get(keyId, url) {
      const id = `${keyId} ${url}`;
      const entry = entries.get(id);
      if (entry === undefined) return undefined;
      if (entry.expires > now()) return entry;
      entries.delete(id);
      return undefined;
    },
    async set(keyId, url, answer, ttlMs, generation) {
      if ((generations.get(keyId) ?? 0) !== generation) return;
      const id = `${keyId} ${url}`;
      entries.delete(id);
      entries.set(id, { ...answer, expires: now() + ttlMs });
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
    async generation(keyId) {
      return generations.get(keyId) ?? 0;
    },
    async invalidate(keyId) {
      const prefix = `${keyId} `;
      for (const id of [...entries.keys()]) if (id.startsWith(prefix)) entries.delete(id);
      generations.set(keyId, (generations.get(keyId) ?? 0) + 1);
      // One generation per key that ever wrote; client keys are unbounded.
      if (generations.size > maxEntries * 10) generations.clear();
    },
    async close() {
      entries.clear();
    },
  };
}
