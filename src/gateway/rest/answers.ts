/**
 * Recent upstream answers (200s to GETs), per key and URL, kept for the cache and for serving stale
 * instead of an error. In process, or shared by replicas through Redis (entries named by the key's
 * digest, never the key; each expires by itself in Redis). A write for a key invalidates its entries
 * everywhere at once: each entry carries the key's write generation, and a write bumps it. A
 * flushed or unreachable Redis degrades to the in-process store, never to an error.
 */

import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { UpstreamResponse } from './response.js';

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

export interface RedisAnswersOptions {
  readonly url: string;
  readonly prefix?: string;
  /** Used while Redis is unreachable. */
  readonly fallback: AnswerStore;
  readonly onDegraded?: (error: unknown) => void;
}

/** Shared by the replicas on one Redis; the fallback serves while Redis does not answer. */
export function redisAnswers(options: RedisAnswersOptions): AnswerStore {
  const prefix = options.prefix ?? 'petstore-gateway';
  const redis = new Redis(options.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 500,
    retryStrategy: (attempt) => Math.min(100 * attempt, 1_000),
  });
  redis.on('error', () => {});
  // One hash tag per API key: a key's generation and its answers in one Redis Cluster slot.
  const generationKey = (keyId: string) => `${prefix}:{${keyId}}:gen`;
  const answerKey = (keyId: string, url: string) =>
    `${prefix}:{${keyId}}:answer:${createHash('sha256').update(url).digest('base64url').slice(0, 22)}`;
  let degraded = false;
  async function shared<T>(run: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    if (redis.status !== 'ready') return local();
    try {
      const value = await run();
      degraded = false;
      return value;
    } catch (error) {
      if (!degraded) options.onDegraded?.(error);
      degraded = true;
      return local();
    }
  }
  return {
    get: (keyId, url) =>
      shared(
        async () => {
          const [generation, stored] = await redis.mget(generationKey(keyId), answerKey(keyId, url));
          if (stored === null) return undefined;
          const entry = JSON.parse(stored) as StoredAnswer & { readonly generation: number };
          // Written before the key's latest write: the world before it.
          return entry.generation === Number(generation ?? 0) ? entry : undefined;
        },
        () => options.fallback.get(keyId, url),
      ),
    set: (keyId, url, answer, ttlMs, generation) =>
      shared(
        async () => {
          // What a reader needs of the answer: the body, and the Link to the next page.
          const { status, body, headers } = answer.response;
          const kept = headers.link === undefined ? {} : { link: headers.link };
          const value = JSON.stringify({ response: { status, headers: kept, body }, at: answer.at, generation });
          await redis.set(answerKey(keyId, url), value, 'PX', Math.max(1, Math.round(ttlMs)));
        },
        () => options.fallback.set(keyId, url, answer, ttlMs, generation),
      ),
    generation: (keyId) =>
      shared(
        async () => Number((await redis.get(generationKey(keyId))) ?? 0),
        () => options.fallback.generation(keyId),
      ),
    async invalidate(keyId) {
      await options.fallback.invalidate(keyId);
      await shared(
        async () => {
          // Generations outlive the answers they fence (a day is longer than any TTL here).
          await redis.multi().incr(generationKey(keyId)).pexpire(generationKey(keyId), 86_400_000).exec();
        },
        async () => {},
      );
    },
    async close() {
      redis.disconnect();
      await options.fallback.close();
    },
  };
}
