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
 * A write while Redis cannot be reached is not lost: the key is held as pending, served from the
 * fallback (which knows of the write), and its new generation is written to Redis as soon as Redis
 * answers again, retried until it is. Too many pending keys to hold, and every generation in Redis
 * is dropped when it returns instead, which fences everything kept before.
 */

import { createHash, randomBytes } from 'node:crypto';
import type { RedisConnection } from '../redis-connection.js';
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
  readonly onDegraded?: (error: unknown) => void;
  /** Keys written while Redis was away held to be replayed one by one (default 10,000); past it, all are fenced. */
  readonly maxPending?: number;
  /** Told when more keys wrote while Redis was away than are held: every generation is dropped when it returns. */
  readonly onFencedAll?: () => void;
}

/** Generations outlive the answers they fence (a day is longer than any TTL here); an expired one is only renewed. */
const GENERATION_TTL_MS = 86_400_000;
/** How often pending writes are tried again while Redis does not answer. */
const REPLAY_EVERY_MS = 500;

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
  let replayTimer: NodeJS.Timeout | undefined;
  let replaying = false;

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

  async function replay(): Promise<void> {
    if (replaying) return;
    replaying = true;
    try {
      if (overflowed) {
        // Keys held before the sweep are covered by it; one held during it is bumped below.
        const covered = [...pending];
        await fenceAll();
        overflowed = false;
        for (const keyId of covered) pending.delete(keyId);
      }
      for (const keyId of [...pending]) {
        await bump(keyId);
        pending.delete(keyId);
      }
    } catch {
      // Redis went away again: the timer tries later.
    } finally {
      replaying = false;
      if (pending.size === 0 && !overflowed && replayTimer !== undefined) {
        clearInterval(replayTimer);
        replayTimer = undefined;
      }
    }
  }

  /** The key wrote while Redis could not be told: held until it can. */
  function pend(keyId: string): void {
    if (pending.size < maxPending) pending.add(keyId);
    else if (!overflowed) {
      overflowed = true;
      options.onFencedAll?.();
    }
    replayTimer ??= setInterval(() => {
      if (redis.status === 'ready') void replay();
    }, REPLAY_EVERY_MS).unref();
  }

  let degraded = false;
  /** Whether the fallback served last: each switch between it and Redis starts it empty (below). */
  let local = false;
  function serveLocally(): void {
    // Answers kept in process during an earlier outage may be from before writes other replicas made
    // since; and once Redis serves again, what the fallback holds only takes memory.
    if (!local) fallback.clear();
    local = true;
  }
  async function shared<T>(run: () => Promise<T>, onLocal: () => Promise<T>): Promise<T> {
    if (redis.status !== 'ready') {
      serveLocally();
      return onLocal();
    }
    try {
      const value = await run();
      degraded = false;
      if (local) fallback.clear();
      local = false;
      if (pending.size > 0 || overflowed) void replay();
      return value;
    } catch (error) {
      if (!degraded) options.onDegraded?.(error);
      degraded = true;
      serveLocally();
      return onLocal();
    }
  }

  /** A key written while Redis was away is the fallback's until its write reaches Redis: only it knows of it. */
  const isPending = (keyId: string) => (pending.size > 0 && pending.has(keyId)) || overflowed;

  return {
    read(keyId, url) {
      if (isPending(keyId)) return fallback.read(keyId, url);
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
      if (isPending(keyId)) return fallback.generation(keyId);
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
      if (replayTimer !== undefined) clearInterval(replayTimer);
      await fallback.close();
    },
  };
}
