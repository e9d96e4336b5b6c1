/**
 * The answer store shared by replicas through Redis (answers.ts says what it keeps): entries named
 * by the key's digest, never the key, each expiring by itself in Redis. A flushed or unreachable
 * Redis degrades to the in-process fallback, never to an error. A module of its own, loaded only with
 * a Redis configured. On a Redis Cluster a key's generation and its answers share the key's hash tag,
 * so the one multi-key command here (MGET) touches one slot; nothing here spans two API keys.
 *
 * Generations in Redis are random tokens, not counters, and a read that finds none sets one: after
 * a flush, a restart without persistence or an expiry, a key's generation is new, never one that
 * answers or learned pets from before carry (a counter would start again at 0 and meet them).
 *
 * Redis or the fallback serves as redis/fallback.ts decides (the budget runs on the same rule). A
 * write while Redis cannot be reached is not lost: the fallback knows of it, and on the way back its
 * key's new generation is written to Redis before anything is read there again. Too many pending
 * keys to hold, and every generation in Redis is dropped instead, which fences everything kept before.
 */

import { createHash, randomBytes } from 'node:crypto';
import type { RedisConnection } from '../redis/connection.js';
import { createFallback } from '../redis/fallback.js';
import type { Generation } from '../response.js';
import {
  type AnswerStore,
  answerBytes,
  DEFAULT_CACHE_BYTES,
  keptAnswer,
  LARGEST_SHARE,
  type MemoryAnswers,
  type StoredAnswer,
} from './answers.js';

export interface RedisAnswersOptions {
  /** Made by createRedisConnection (one server, Cluster or Sentinel); closed by whoever made it. */
  readonly connection: RedisConnection;
  readonly prefix?: string;
  /** Used while Redis is unreachable, and for keys written then. */
  readonly fallback: MemoryAnswers;
  /** The in-process budget: an answer too large to keep in process is not pushed to Redis either. */
  readonly maxBytes?: number;
  /** Redis failed or did not answer in time: answers are kept in process until it serves again. */
  readonly onDegraded?: (error: unknown) => void;
  /** Redis serves again, what was written meanwhile replayed there. */
  readonly onRestored?: () => void;
  /** Keys written while Redis was away held to be replayed one by one (default 10,000); past it, all are fenced. */
  readonly maxPending?: number;
  /** Told when more keys wrote while Redis was away than are held: every generation is dropped when it returns. */
  readonly onFencedAll?: () => void;
}

/** Generations outlive the answers they fence (a day is longer than any TTL here); an expired one is only renewed. */
const GENERATION_TTL_MS = 86_400_000;

/** Shared by the replicas on one Redis; the fallback serves while Redis does not answer. */
export function redisAnswers(options: RedisAnswersOptions): AnswerStore {
  const prefix = options.prefix ?? 'petstore-gateway';
  const { fallback } = options;
  const maxEntryBytes = (options.maxBytes ?? DEFAULT_CACHE_BYTES) * LARGEST_SHARE;
  // About 100 bytes each: 1 MB at most.
  const maxPending = options.maxPending ?? 10_000;
  const { connection } = options;
  const redis = connection.client;
  // One hash tag per API key: a key's generation and its answers in one Redis Cluster slot.
  const generationKey = (keyId: string) => `${prefix}:{${keyId}}:gen`;
  const answerKey = (keyId: string, url: string) =>
    `${prefix}:{${keyId}}:answer:${createHash('sha256').update(url).digest('base64url').slice(0, 22)}`;

  // New generations: this process's random nonce and a count, so no two writes anywhere share one.
  const nonce = randomBytes(9).toString('base64url');
  let made = 0;
  const newGeneration = () => `${nonce}.${++made}`;

  const pending = new Set<string>();
  let overflowed = false;

  /**
   * The key's generation when Redis had none (never written, expired, flushed, restarted): a new one,
   * or the one another replica set first. Once per key and flush; the common read is one MGET.
   */
  async function ensureGeneration(keyId: string): Promise<string> {
    const fresh = newGeneration();
    const set = await redis.set(generationKey(keyId), fresh, 'PX', GENERATION_TTL_MS, 'NX');
    if (set === 'OK') return fresh;
    // Another replica set it between our read and our write; gone again already, this read fences all.
    return (await redis.get(generationKey(keyId))) ?? newGeneration();
  }

  /** A key's new generation in Redis: everything kept under its old one is fenced, here and on every replica. */
  async function bump(keyId: string): Promise<void> {
    await redis.set(generationKey(keyId), newGeneration(), 'PX', GENERATION_TTL_MS);
  }

  /** Every generation dropped: the next read of each key sets a new one (the rare path, after too many pending). */
  async function fenceAll(): Promise<void> {
    // SCAN sees one server's keys: on a Cluster every primary is scanned. The keys of one batch are
    // of many API keys (many slots), so each is unlinked by itself, which a Cluster routes to its slot.
    for (const node of connection.primaries()) {
      const stream = node.scanStream({ match: `${prefix}:{*}:gen`, count: 1_000 });
      for await (const keys of stream as AsyncIterable<string[]>) {
        await Promise.all(keys.map((key) => redis.unlink(key)));
      }
    }
  }

  /** On the way back to Redis: the writes made while it was away reach it before anything is read there. */
  async function replay(): Promise<void> {
    if (overflowed) {
      await fenceAll();
      overflowed = false;
      pending.clear();
    }
    for (const keyId of [...pending]) {
      await bump(keyId);
      pending.delete(keyId);
    }
    // What the fallback holds only takes memory once Redis serves again.
    fallback.clear();
  }

  /** The key wrote while Redis could not be told: held until it can. */
  function pend(keyId: string): void {
    if (pending.size < maxPending) pending.add(keyId);
    else if (!overflowed) {
      overflowed = true;
      options.onFencedAll?.();
    }
  }

  const served = createFallback({
    client: redis,
    probe: () => redis.ping(),
    onLost: (error) => {
      options.onDegraded?.(error);
      // Answers kept in process during an earlier outage may be from before writes other replicas made since.
      fallback.clear();
    },
    onBack: async () => {
      await replay();
      options.onRestored?.();
    },
    everyMs: 500,
  });
  const shared = <T>(run: () => Promise<T>, onLocal: () => Promise<T>): Promise<T> => served.run(run, onLocal);

  return {
    read(keyId, url) {
      return shared(
        async () => {
          // Both keys carry the key's hash tag: one slot, one command.
          const [generation, stored] = await redis.mget(generationKey(keyId), answerKey(keyId, url));
          if (generation === null || generation === undefined) {
            return { stored: undefined, generation: await ensureGeneration(keyId) };
          }
          if (stored === null || stored === undefined) return { stored: undefined, generation };
          const entry = JSON.parse(stored) as StoredAnswer;
          // Kept under an earlier generation: from before one of the key's writes.
          return { stored: entry.response.generation === generation ? entry : undefined, generation };
        },
        () => fallback.read(keyId, url),
      );
    },
    generation(keyId) {
      return shared<Generation>(
        async () => (await redis.get(generationKey(keyId))) ?? ensureGeneration(keyId),
        () => fallback.generation(keyId),
      );
    },
    async set(keyId, url, answer, ttlMs, generation) {
      // Read from the fallback: kept there, under its own generations.
      if (typeof generation !== 'string') return fallback.set(keyId, url, answer, ttlMs, generation);
      const key = answerKey(keyId, url);
      if (answerBytes(key, answer.response) > maxEntryBytes) return;
      // What a reader needs of the answer: the body, and the Link to the next page.
      const value = JSON.stringify({ response: keptAnswer(answer.response, generation), at: answer.at });
      // Not kept in process when Redis fails: it was asked under a Redis generation, which the fallback does not know.
      await shared(
        async () => {
          await redis.set(key, value, 'PX', Math.max(1, Math.round(ttlMs)));
        },
        async () => {},
      );
    },
    async invalidate(keyId) {
      await fallback.invalidate(keyId);
      await shared(
        async () => {
          await bump(keyId);
          pending.delete(keyId);
        },
        async () => pend(keyId),
      );
    },
    async close() {
      served.close();
      await fallback.close();
    },
  };
}
