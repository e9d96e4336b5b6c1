/**
 * The budget algorithm, run against each of its stores: the in-process store, and the Lua scripts
 * in a real redis-server, a real Redis Cluster (3 primaries, 3 replicas) and a real primary behind
 * 3 sentinels (all on free ports, stopped by their pids). Times are plain numbers passed in, so each
 * test plays minutes of planning in microseconds.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../../src/config.js';
import { parseConfig, type RedisTarget } from '../../../../src/config.js';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import {
  type BudgetStore,
  MemoryBudgetStore,
  ONE_AT_A_TIME_BELOW,
  PROBE_MS,
} from '../../../../src/gateway/upstream/limits/budget.js';
import { RedisBudgetStore } from '../../../../src/gateway/upstream/limits/budget-redis.js';
import { createRedisConnection } from '../../../../src/gateway/upstream/redis-connection.js';
import {
  type RedisHa,
  type RedisServer,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
} from '../../../helpers/redis.js';

const T = 1_800_000_000_000;
const FAR = T + 86_400_000;
const FIVE_PER_SECOND: RateWindow[] = [{ count: 5, windowMs: 1_000 }];

let redis: RedisServer;
let cluster: RedisHa;
let sentinel: RedisHa;
let run = 0;
beforeAll(async () => {
  // Each kept as it starts: if one fails, afterAll still stops the others.
  await Promise.all([
    startRedis().then((started) => (redis = started)),
    startRedisCluster().then((started) => (cluster = started)),
    startRedisSentinel().then((started) => (sentinel = started)),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([redis?.stop(), cluster?.close(), sentinel?.close()]);
});

/** A store on a connection of its own to `target`, both closed after the test. */
function onRedis(target: () => RedisTarget): () => Promise<BudgetStore> {
  return async () => {
    const connection = createRedisConnection(target());
    const store = new RedisBudgetStore({ connection, logger: createLogger('silent'), prefix: `unit-${run++}` });
    await store.ready();
    return {
      ...bound(store),
      close: async () => {
        await store.close();
        connection.close();
      },
    };
  };
}

/** The store's methods, bound, so a wrapper can replace close(). */
function bound(store: RedisBudgetStore): BudgetStore {
  return {
    reserve: store.reserve.bind(store),
    observe: store.observe.bind(store),
    release: store.release.bind(store),
    pause: store.pause.bind(store),
    pausedUntil: store.pausedUntil.bind(store),
    close: store.close.bind(store),
  };
}

const implementations: [string, () => Promise<BudgetStore>][] = [
  ['in memory', async () => new MemoryBudgetStore()],
  ['in Redis', onRedis(() => parseConfig({ REDIS_URL: redis.url }).redis as RedisTarget)],
  ['in a Redis Cluster', onRedis(() => parseConfig(cluster.env).redis as RedisTarget)],
  ['in Redis behind Sentinel', onRedis(() => parseConfig(sentinel.env).redis as RedisTarget)],
];

describe.each(implementations)('the budget %s', (_name, create) => {
  let store: BudgetStore;
  beforeEach(async () => {
    store = await create();
    return () => store.close();
  });

  /** Reserves and, when it went, answers as an upstream with `remaining` left until `reset` would. */
  async function sendAndAnswer(now: number, remaining: number, resetAt = T + 1_000) {
    const reservation = await store.reserve('k', FIVE_PER_SECOND, now, FAR);
    if (!reservation.ok) return reservation;
    await store.observe('k', { seq: reservation.seq, limit: 5, remaining, resetAt }, now);
    return reservation;
  }

  it('sends one probe while the upstream state is unknown, and waits for its answer', async () => {
    const probe = await store.reserve('k', FIVE_PER_SECOND, T, FAR);
    expect(probe).toMatchObject({ ok: true, at: T, seq: 1 });
    expect(await store.reserve('k', FIVE_PER_SECOND, T, FAR)).toEqual({
      ok: false,
      retryAt: T + PROBE_MS,
      probing: true,
    });
    await store.observe('k', { seq: 1, limit: 5, remaining: 4, resetAt: T + 1_000 }, T + 5);
    expect(await store.reserve('k', FIVE_PER_SECOND, T + 5, FAR)).toMatchObject({ ok: true, at: T + 5 });
  });

  it('plans no more than Remaining before Reset, less what is still in flight', async () => {
    const windows = [{ count: 100, windowMs: 1_000 }];
    const probe = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    await store.observe('k', { seq: probe.seq, limit: 100, remaining: 40, resetAt: T + 1_000 }, T);
    const inFlight = (await store.reserve('k', windows, T + 1, FAR)) as { seq: number };
    const answered = (await store.reserve('k', windows, T + 1, FAR)) as { seq: number };
    // The store has 12 left, but the request still in flight may not be counted in that yet: 11 more.
    await store.observe('k', { seq: answered.seq, limit: 100, remaining: 12, resetAt: T + 1_000 }, T + 2);
    await store.release('k', inFlight.seq);
    let planned = 0;
    for (;;) {
      const next = await store.reserve('k', windows, T + 3, FAR);
      if (!next.ok) {
        expect(next).toEqual({ ok: false, retryAt: T + 1_000 });
        break;
      }
      planned++;
      await store.release('k', next.seq);
    }
    expect(planned).toBe(11);
  });

  it('lets the last few requests of a window go one at a time', async () => {
    const windows = [{ count: 100, windowMs: 1_000 }];
    const probe = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    await store.observe('k', { seq: probe.seq, limit: 100, remaining: ONE_AT_A_TIME_BELOW + 2, resetAt: T + 1_000 }, T);
    // Above the threshold, concurrently; at it, only while nothing else is in flight.
    const a = await store.reserve('k', windows, T + 1, FAR);
    const b = await store.reserve('k', windows, T + 1, FAR);
    expect([a.ok, b.ok]).toEqual([true, true]);
    expect(await store.reserve('k', windows, T + 1, FAR)).toEqual({
      ok: false,
      retryAt: T + 1 + PROBE_MS,
      probing: true,
    });
    await store.release('k', (a as { seq: number }).seq);
    expect((await store.reserve('k', windows, T + 2, FAR)).ok).toBe(false);
    await store.release('k', (b as { seq: number }).seq);
    const c = await store.reserve('k', windows, T + 3, FAR);
    expect(c.ok).toBe(true);
    expect((await store.reserve('k', windows, T + 3, FAR)).ok).toBe(false);
  });

  it('keeps at most count sends in any window-long span, planning the rest in the future', async () => {
    await sendAndAnswer(T, 100, T + 60_000);
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const reservation = await store.reserve('k', FIVE_PER_SECOND, T + 10, FAR);
      if (reservation.ok) times.push(reservation.at);
    }
    expect(times).toEqual([T + 10, T + 10, T + 10, T + 10, T + 1_000, T + 1_010, T + 1_010]);
  });

  it('refuses at once, with the time budget returns, what cannot be sent before the deadline', async () => {
    await sendAndAnswer(T, 0, T + 30_000);
    expect(await store.reserve('k', FIVE_PER_SECOND, T + 1, T + 10_000)).toEqual({ ok: false, retryAt: T + 30_000 });
  });

  it('ignores an answer older than the one the gate came from', async () => {
    const windows = [{ count: 100, windowMs: 1_000 }];
    const first = await store.reserve('k', windows, T, FAR);
    await store.observe('k', { seq: (first as { seq: number }).seq, limit: 100, remaining: 40, resetAt: T + 1_000 }, T);
    const a = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    const b = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    await store.observe('k', { seq: b.seq, limit: 100, remaining: 0, resetAt: T + 1_000 }, T + 2);
    await store.observe('k', { seq: a.seq, limit: 100, remaining: 30, resetAt: T + 1_000 }, T + 3);
    expect(await store.reserve('k', windows, T + 4, FAR)).toEqual({ ok: false, retryAt: T + 1_000 });
  });

  it('after a 429 plans nothing until the pause ends, then probes again', async () => {
    await sendAndAnswer(T, 4);
    await store.pause('k', T + 3_000, 1);
    expect(await store.pausedUntil('k')).toBe(T + 3_000);
    const probe = await store.reserve('k', FIVE_PER_SECOND, T + 10, FAR);
    expect(probe).toMatchObject({ ok: true, at: T + 3_000 });
    expect((await store.reserve('k', FIVE_PER_SECOND, T + 10, FAR)).ok).toBe(false);
  });

  it('with throttling off (no windows) honours only the pause', async () => {
    for (let i = 0; i < 20; i++) expect(await store.reserve('k', [], T, FAR)).toMatchObject({ ok: true, at: T });
    await store.pause('k', T + 2_000, 20);
    expect(await store.reserve('k', [], T, FAR)).toMatchObject({ ok: true, at: T + 2_000 });
  });

  it('no longer counts a released reservation as in flight', async () => {
    await sendAndAnswer(T, 4);
    const lost = (await store.reserve('k', FIVE_PER_SECOND, T + 1, FAR)) as { seq: number };
    await store.release('k', lost.seq);
    await sendAndAnswer(T + 2, 2);
    expect((await store.reserve('k', FIVE_PER_SECOND, T + 3, FAR)).ok).toBe(true);
  });

  it('keeps keys apart', async () => {
    await sendAndAnswer(T, 0, T + 30_000);
    expect((await store.reserve('other', FIVE_PER_SECOND, T, FAR)).ok).toBe(true);
  });

  it('is not opened by an answer without rate-limit headers: the next request is another probe', async () => {
    const probe = (await store.reserve('k', FIVE_PER_SECOND, T, FAR)) as { seq: number };
    expect(await store.observe('k', { seq: probe.seq, limit: 0, remaining: 0, resetAt: 0 }, T + 1)).toEqual({
      limit: 0,
      remaining: 0,
      resetAt: 0,
    });
    expect(await store.reserve('k', FIVE_PER_SECOND, T + 2, FAR)).toMatchObject({ ok: true });
    expect(await store.reserve('k', FIVE_PER_SECOND, T + 2, FAR)).toMatchObject({ ok: false, probing: true });
  });

  it('keeps a known gate across an answer without headers', async () => {
    const windows = [{ count: 100, windowMs: 1_000 }];
    const probe = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    await store.observe('k', { seq: probe.seq, limit: 100, remaining: 7, resetAt: T + 1_000 }, T);
    const headerless = (await store.reserve('k', windows, T + 1, FAR)) as { seq: number };
    expect(await store.observe('k', { seq: headerless.seq, limit: 0, remaining: 0, resetAt: 0 }, T + 2)).toEqual({
      limit: 100,
      remaining: 6,
      resetAt: T + 1_000,
    });
  });

  it('lets the next request probe at once when a probe got no answer', async () => {
    const probe = (await store.reserve('k', FIVE_PER_SECOND, T, FAR)) as { seq: number };
    await store.release('k', probe.seq);
    expect(await store.reserve('k', FIVE_PER_SECOND, T + 1, FAR)).toMatchObject({ ok: true, at: T + 1 });
  });

  it('lets a 429 to a request planned before the pause lengthen it, but not start a second probe', async () => {
    const windows = [{ count: 100, windowMs: 1_000 }];
    const first = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    await store.observe('k', { seq: first.seq, limit: 100, remaining: 50, resetAt: T + 1_000 }, T);
    const a = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    const b = (await store.reserve('k', windows, T, FAR)) as { seq: number };
    await store.observe('k', { seq: a.seq, limit: 100, remaining: 0, resetAt: T + 1_000 }, T + 1);
    await store.pause('k', T + 1_000, a.seq);
    // b was sent before the pause and has no answer yet: no probe goes while it may still meet a 429.
    expect(await store.reserve('k', windows, T + 5, FAR)).toMatchObject({ ok: false, probing: true });
    await store.observe('k', { seq: b.seq, limit: 100, remaining: 0, resetAt: T + 1_000 }, T + 6);
    await store.pause('k', T + 1_020, b.seq);
    expect(await store.pausedUntil('k')).toBe(T + 1_020);
    expect(await store.reserve('k', windows, T + 7, FAR)).toMatchObject({ ok: true, at: T + 1_020 });
    expect(await store.reserve('k', windows, T + 7, FAR)).toMatchObject({ ok: false, probing: true });
  });
});

describe('the in-memory budget with many keys', () => {
  const windows = [{ count: 5, windowMs: 1_000 }];
  const answer = async (store: MemoryBudgetStore, key: string, now: number, remaining: number) => {
    const reservation = (await store.reserve(key, windows, now, FAR)) as { seq: number };
    await store.observe(key, { seq: reservation.seq, limit: 5, remaining, resetAt: now + 60_000 }, now);
  };

  it('forgets idle keys, but never one that is paused or whose window is spent', async () => {
    const store = new MemoryBudgetStore({ idleMs: 10_000 });
    await answer(store, 'idle', T, 4);
    await answer(store, 'spent', T, 0);
    await answer(store, 'paused', T, 4);
    await store.pause('paused', T + 120_000, 99);
    // A new key after the idle time sweeps.
    await answer(store, 'new', T + 20_000, 4);
    expect(store.size).toBe(3);
    expect(await store.reserve('spent', windows, T + 20_000, T + 30_000)).toMatchObject({ ok: false });
    expect(await store.pausedUntil('paused')).toBe(T + 120_000);
  });

  it('holds at most maxKeys that may be forgotten, dropping the least recently used', async () => {
    const store = new MemoryBudgetStore({ maxKeys: 100, idleMs: 3_600_000 });
    for (let i = 0; i < 1_000; i++) await answer(store, `key-${i}`, T + i, 4);
    expect(store.size).toBeLessThanOrEqual(100);
  });

  it('frees a tenth of the bound at once, the least recently used first, so new keys do not each sort all', async () => {
    const store = new MemoryBudgetStore({ maxKeys: 100, idleMs: 3_600_000 });
    // Within one second, so only the bound sweeps (not the once-a-second idle sweep).
    for (let i = 0; i < 100; i++) await answer(store, `key-${i}`, T, 4);
    await answer(store, 'key-0', T + 1, 4);
    expect(store.size).toBe(100);
    await answer(store, 'key-100', T + 2, 4);
    // Down to 90, then the new one: the ten used least recently went, key-0 (used again) stayed.
    expect(store.size).toBe(91);
    for (let i = 101; i < 110; i++) await answer(store, `key-${i}`, T + 3, 4);
    expect(store.size).toBe(100);
    // Known keys count their earlier sends in the window; a forgotten one starts again at 1.
    expect(await store.reserve('key-0', windows, T + 4, FAR)).toMatchObject({ ok: true, used: 3 });
    expect(await store.reserve('key-11', windows, T + 4, FAR)).toMatchObject({ ok: true, used: 2 });
    expect(await store.reserve('key-10', windows, T + 4, FAR)).toMatchObject({ ok: true, used: 1 });
  });
});
