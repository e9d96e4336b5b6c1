/**
 * createUpstream(config) → the REST client and what it needs: the budget store (in memory, or
 * shared through Redis), the limiter, sharing and the answer store, the refused-keys memory. Built
 * from its slice of the configuration; the rest of the gateway sees the client, the key's budget
 * and a close().
 */

import { randomBytes } from 'node:crypto';
import type { Tracer } from '@opentelemetry/api';
import { type Config, ConfigError, REDIS_VARIABLE } from '../../config.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { createRestClient, type RestClient } from './client.js';
import { type BudgetStore, MemoryBudgetStore } from './limits/budget.js';
import { createLimiter, type Limiter } from './limits/limiter.js';
import type { Plan } from './limits/model.js';
import { createSlots } from './limits/slots.js';
import { recordLimiterEvent, upstreamObserver } from './metrics.js';
import type { Generation } from './response.js';
import { memoryAnswers } from './sharing/answers.js';
import { createResponseSharing } from './sharing/sharing.js';
import { rejectedKeys } from './stages/rejected-keys.js';

export type UpstreamConfig = Pick<
  Config,
  | 'petstoreBaseUrl'
  | 'rateLimits'
  | 'maxWaitMs'
  | 'timeoutMs'
  | 'cacheTtlMs'
  | 'staleTtlMs'
  | 'cacheSizeBytes'
  | 'coalesce'
  | 'maxRetryAfterMs'
  | 'keyIdleMs'
  | 'maxKeys'
  | 'redis'
  | 'upstreamConnections'
  | 'upstreamConnectionsPerKey'
  | 'maxQueuedPerClient'
>;

export interface UpstreamDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Prefix of the gateway's Redis keys, so tests can share a Redis. */
  readonly redisPrefix?: string | undefined;
  /** A span per upstream request when given; none: no tracing work at all. */
  readonly tracer?: Tracer | undefined;
  /** Told of every key whose remembered reads a write ended (the edge shares executions too). */
  readonly onInvalidate?: (keyId: string) => void;
  /** Where upstream requests go instead of a pool of their own (the budget simulation's upstream). */
  readonly dispatcher?: import('undici').Dispatcher;
  /** Where the budget lives instead of a store of its own (the budget simulation's shared store). */
  readonly budgetStore?: (plan: Plan) => BudgetStore;
}

export interface Upstream {
  readonly client: RestClient;
  readonly limiter: Limiter;
  /** A cursor secret the replicas agreed on through Redis, when they share one. */
  readonly agreedSecret: string | undefined;
  /** Which Redis is shared (none: all in process), and whether the budget is on it now (for /ready). */
  redisStatus(): RedisStatus;
  /** A key's write generation now (sharing/answers.ts); 0 when no answers are kept. */
  writeGeneration(keyId: string): Promise<Generation>;
  close(): Promise<void>;
}

export interface RedisStatus {
  readonly mode: 'none' | 'single' | 'cluster' | 'sentinel';
  /** False while the budget plans on the local share (Redis unreachable, or mid-failover). */
  readonly reachable: boolean;
}

export async function createUpstream(config: UpstreamConfig, deps: UpstreamDeps): Promise<Upstream> {
  if (config.petstoreBaseUrl === undefined) throw new Error('createUpstream needs config.petstoreBaseUrl');
  const { logger, metrics } = deps;
  const prefix = deps.redisPrefix ? { prefix: deps.redisPrefix } : {};
  // ioredis (with its dependencies, ~2 MB of heap) is loaded only with a Redis configured.
  let store: BudgetStore;
  // Replicas must accept each other's cursors: the secret is configured, or agreed on through Redis.
  let agreedSecret: string | undefined;
  const redis = config.redis;
  const connect = redis ? (await import('./redis/connection.js')).createRedisConnection : undefined;
  // The budget and the answer cache on connections of their own: an answer of megabytes on the wire
  // would hold up the budget's scripts behind it (one connection is one ordered stream), and a
  // reservation is what requests wait on. A third, subscribed, hears other replicas' answers.
  const budgetConnection =
    redis && connect
      ? connect(redis, {
          onFailover: (from, to) => {
            metrics.redisFailovers.inc();
            logger.warn({ mode: redis.mode, from, to }, 'Redis failed over: the budget follows the new primary');
          },
        })
      : undefined;
  let shared: import('./limits/shared-budget.js').SharedBudgetStore | undefined;
  // Subscribed to the answers other replicas record, so a request waiting on one is woken, not polling.
  let subscriber: import('./redis/connection.js').RedisConnection | undefined;
  const plan = { windows: config.rateLimits, share: 1 };
  if (redis && budgetConnection) {
    const { SharedBudgetStore } = await import('./limits/shared-budget.js');
    subscriber = connect?.(redis, { offlineQueue: true });
    shared = new SharedBudgetStore({
      client: budgetConnection.client,
      subscriber: subscriber?.client,
      prefix: deps.redisPrefix || 'petstore-gateway',
      plan,
      now: deps.now,
      logger,
      inflightMs: config.maxWaitMs + 2 * config.timeoutMs + 5_000,
      maxKeys: config.maxKeys,
      idleMs: config.keyIdleMs,
      onShared: (up) => metrics.redisUp.set({ mode: redis.mode }, up ? 1 : 0),
    });
    // ready() resolves after 3 s without an answer too; the secret is agreed on only if Redis answers.
    await shared.ready();
    agreedSecret = await sharedSecret(budgetConnection.client, deps.redisPrefix || 'petstore-gateway');
    // Alone, without Redis and without having seen the other replicas, this one would plan the whole
    // plan for itself: N replicas starting so would spend N times the key's budget.
    if (agreedSecret === undefined || shared.degraded) {
      await shared.close();
      budgetConnection.close();
      subscriber?.close();
      throw new ConfigError(await budgetConnection.startFailure(REDIS_VARIABLE[redis.mode], shared.startError));
    }
    metrics.redisUp.set({ mode: redis.mode }, 1);
    store = shared;
  } else {
    store =
      deps.budgetStore?.(plan) ?? new MemoryBudgetStore({ plan, idleMs: config.keyIdleMs, maxKeys: config.maxKeys });
  }
  const limiter = createLimiter({
    windows: config.rateLimits,
    store,
    // The pool, shared round-robin across keys when short; one key's share of it is the limiter's own.
    slots: createSlots({
      total: config.upstreamConnections,
      perKey: config.upstreamConnections,
      maxQueuedPerClient: Number.POSITIVE_INFINITY,
      now: deps.now,
    }),
    perKey: config.upstreamConnectionsPerKey,
    maxQueuedPerClient: config.maxQueuedPerClient,
    maxRetryAfterMs: config.maxRetryAfterMs,
    maxKeys: config.maxKeys,
    now: deps.now,
    onEvent: (event) => {
      if (event.type === 'bottleneckError') {
        logger.error({ err: event.error }, 'bottleneck reported an error; the request it concerned failed');
      }
      if (event.type === 'clamped') {
        logger.warn(
          { header: event.header, maxSeconds: config.maxRetryAfterMs / 1000 },
          'the Pet Store sent a rate-limit time beyond PETSTORE_MAX_RETRY_AFTER; clamped',
        );
      }
      recordLimiterEvent(metrics, event);
    },
  });
  metrics.watchLimiter(limiter);
  const keepsAnswers = config.cacheTtlMs > 0 || config.staleTtlMs > 0;
  const answersConnection = keepsAnswers && redis && connect ? connect(redis, { commandTimeoutMs: 500 }) : undefined;
  const sharing =
    config.coalesce || keepsAnswers
      ? createResponseSharing({
          coalesce: config.coalesce,
          ttlMs: config.cacheTtlMs,
          staleTtlMs: config.staleTtlMs,
          // With Redis, answers (cached and stale) serve every replica; without it, this one.
          answers: answersConnection
            ? (await import('./sharing/answers-redis.js')).redisAnswers({
                connection: answersConnection,
                ...prefix,
                fallback: memoryAnswers({ maxBytes: config.cacheSizeBytes }),
                maxBytes: config.cacheSizeBytes,
                // A command time-out (500 ms) is not an outage: say what happened, and when it is over.
                onDegraded: (error) =>
                  logger.warn(
                    { reason: (error as Error)?.message },
                    'Redis failed or did not answer in time: answers cached in this process until it serves again',
                  ),
                onRestored: () => logger.info('Redis serves again: answers shared across replicas again'),
                onFencedAll: () =>
                  logger.error(
                    'more keys wrote while Redis was unreachable than are held to replay: when it returns, every generation there is dropped, which fences every answer kept',
                  ),
              })
            : memoryAnswers({ maxBytes: config.cacheSizeBytes }),
          onCoalesced: () => metrics.coalesced.inc(),
          onCacheHit: () => metrics.cacheHits.inc(),
          onStale: () => metrics.staleServed.inc(),
          ...(deps.onInvalidate ? { onInvalidate: deps.onInvalidate } : {}),
        })
      : undefined;
  // Loaded only with a tracer: a gateway that does not trace never loads the propagator (@opentelemetry/core).
  const tracing = deps.tracer ? (await import('./stages/span.js')).traceUpstream(deps.tracer) : undefined;
  const client = createRestClient({
    baseUrl: config.petstoreBaseUrl,
    timeoutMs: config.timeoutMs,
    maxWaitMs: config.maxWaitMs,
    connections: config.upstreamConnections,
    logger,
    limiter: limiter.stage,
    rejectedKeys: rejectedKeys({
      maxKeys: config.maxKeys,
      maxBytes: config.cacheSizeBytes / 8,
      onRemembered: () => metrics.refusedFromMemory.inc(),
    }),
    observer: upstreamObserver(metrics),
    now: deps.now,
    ...(sharing ? { sharing } : {}),
    ...(tracing ? { tracing } : {}),
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
  });
  return {
    client,
    limiter,
    agreedSecret,
    writeGeneration: (keyId) => sharing?.generation(keyId) ?? Promise.resolve(0),
    redisStatus: () => ({ mode: redis?.mode ?? 'none', reachable: shared === undefined || !shared.degraded }),
    async close() {
      await client.close();
      await sharing?.close();
      await limiter.close();
      answersConnection?.close();
      budgetConnection?.close();
      subscriber?.close();
    },
  };
}

/**
 * A secret every replica agrees on (the first to ask makes it), or undefined while Redis does not
 * answer: the caller then makes one of its own. One key, used alone: on a Cluster it lives in
 * whatever slot its name hashes to, and needs no hash tag.
 */
async function sharedSecret(client: import('./redis/connection.js').RedisClient, prefix: string) {
  if (client.status !== 'ready') return undefined;
  const key = `${prefix}:cursor-secret`;
  try {
    await client.set(key, randomBytes(32).toString('hex'), 'NX');
    return (await client.get(key)) ?? undefined;
  } catch {
    return undefined;
  }
}
