/**
 * The answer store shared by replicas through Redis (answers.ts says what it keeps): entries named
 * by the key's digest, never the key, each expiring by itself in Redis. A flushed or unreachable
 * Redis degrades to the in-process fallback, never to an error. A module of its own so that a
 * gateway without REDIS_URL never loads ioredis (server.ts imports this only with it).
 */

import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { AnswerStore, StoredAnswer } from './answers.js';

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
