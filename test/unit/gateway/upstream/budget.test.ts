/**
 * The key's budget (src/gateway/upstream/limits/model.ts), run against each of its stores: the
 * in-process store, and the Lua scripts in a real redis-server, a real Redis Cluster (3 primaries, 3
 * replicas) and a real primary behind 3 sentinels (all on free ports, stopped by their pids). Times
 * are plain numbers passed in, so each test plays minutes of planning in microseconds. What only the
 * in-process store does (forgetting keys, seeding a local share) is in budget-memory.test.ts.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../../src/config.js';
import { parseConfig, type RedisTarget } from '../../../../src/config.js';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import { type BudgetStore, MemoryBudgetStore } from '../../../../src/gateway/upstream/limits/budget.js';
import {
  type Answer,
  NO_ANSWER,
  ONE_AT_A_TIME_BELOW,
  PROBE_MS,
  SAFE_CWND,
} from '../../../../src/gateway/upstream/limits/model.js';
import { SharedBudgetStore } from '../../../../src/gateway/upstream/limits/shared-budget.js';
import { createRedisConnection } from '../../../../src/gateway/upstream/redis/connection.js';
import { bare, said, seqOf, tooMany } from '../../../helpers/budget-answers.js';
import {
  type RedisHa,
  type RedisServer,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
} from '../../../helpers/redis.js';

const T = 1_800_000_000_000;
const FIVE_PER_SECOND: RateWindow[] = [{ count: 5, windowMs: 1_000 }];
const HUNDRED_PER_SECOND: RateWindow[] = [{ count: 100, windowMs: 1_000 }];

let redis: RedisServer;
let cluster: RedisHa;
let sentinel: RedisHa;
let run = 0;
/** BUDGET_REDIS=single (mutation testing) leaves out the Cluster and Sentinel runs of the same rules. */
const single = process.env.BUDGET_REDIS === 'single';
beforeAll(async () => {
  // Each kept as it starts: if one fails, afterAll still stops the others.
  await Promise.all([
    startRedis().then((started) => (redis = started)),
    single ? undefined : startRedisCluster().then((started) => (cluster = started)),
    single ? undefined : startRedisSentinel().then((started) => (sentinel = started)),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([redis?.stop(), cluster?.close(), sentinel?.close()]);
});

type Create = (windows: readonly RateWindow[]) => Promise<BudgetStore>;

/** The shared store on a connection of its own to `target`, both closed with it. */
function onRedis(target: () => RedisTarget): Create {
  return async (windows) => {
    const connection = createRedisConnection(target());
    const store = new SharedBudgetStore({
      client: connection.client,
      prefix: `unit-${run++}`,
      plan: { windows, share: 1 },
      now: () => Date.now(),
      logger: createLogger('silent'),
      inflightMs: 60_000,
    });
    await store.ready();
    const close = store.close.bind(store);
    return Object.assign(store, {
      close: async () => {
        await close();
        connection.close();
      },
    });
  };
}

const stores: [string, Create][] = [
  ['in memory', async (windows) => new MemoryBudgetStore({ plan: { windows, share: 1 } })],
  ['in Redis', onRedis(() => parseConfig({ REDIS_URL: redis.url }).redis as RedisTarget)],
  ['in a Redis Cluster', onRedis(() => parseConfig(cluster.env).redis as RedisTarget)],
  ['in Redis behind Sentinel', onRedis(() => parseConfig(sentinel.env).redis as RedisTarget)],
];
const implementations = single ? stores.slice(0, 2) : stores;

describe.each(implementations)('the budget %s', (_name, create) => {
  let store: BudgetStore;
  const open = async (windows: readonly RateWindow[]) => {
    store = await create(windows);
    return store;
  };
  afterAll(() => store?.close());
  const answer = (seq: number, how: Answer, now: number) => store.answer('k', seq, how, now, store.epoch);

  it('sends one probe while the upstream state is unknown, and waits for its answer', async () => {
    await open(FIVE_PER_SECOND);
    const probe = seqOf(await store.reserve('k', T));
    expect(await store.reserve('k', T)).toEqual({ ok: false, room: { free: 0, until: T + PROBE_MS, wait: 'answer' } });
    await answer(probe, said(4, T + 1_000, 5), T + 5);
    expect(await store.reserve('k', T + 5)).toMatchObject({ ok: true });
    await store.close();
  });

  it('plans no more than Remaining before Reset, less what is still in flight', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(40, T + 1_000), T);
    const inFlight = seqOf(await store.reserve('k', T + 1));
    const answered = seqOf(await store.reserve('k', T + 1));
    // The store has 12 left, but the request still in flight may not be counted in that yet: 11 more.
    await answer(answered, said(12, T + 1_000), T + 2);
    await store.release('k', inFlight, T + 2, store.epoch);
    let planned = 0;
    for (;;) {
      const next = await store.reserve('k', T + 3);
      if (!next.ok) {
        expect(next.room).toMatchObject({ free: 0, until: T + 1_000, wait: 'gate' });
        break;
      }
      planned++;
      await store.release('k', next.seq, T + 3, store.epoch);
    }
    expect(planned).toBe(11);
    await store.close();
  });

  it('lets the last few requests of a window go one at a time', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(ONE_AT_A_TIME_BELOW + 2, T + 1_000), T);
    // Above the threshold, concurrently; at it, only while nothing else is in flight.
    const a = seqOf(await store.reserve('k', T + 1));
    const b = seqOf(await store.reserve('k', T + 1));
    expect(await store.reserve('k', T + 1)).toEqual({
      ok: false,
      room: { free: 0, until: T + 1 + PROBE_MS, wait: 'answer' },
    });
    await store.release('k', a, T + 2, store.epoch);
    expect((await store.reserve('k', T + 2)).ok).toBe(false);
    await store.release('k', b, T + 3, store.epoch);
    expect((await store.reserve('k', T + 3)).ok).toBe(true);
    expect((await store.reserve('k', T + 3)).ok).toBe(false);
    await store.close();
  });

  it('keeps at most count sends in any window-long span, and says when the next one may go', async () => {
    await open(FIVE_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(100, T + 60_000), T);
    const frees: number[] = [];
    for (let i = 0; i < 4; i++) {
      const planned = await store.reserve('k', T + 10 * (i + 1));
      frees.push(planned.ok ? planned.room.free : -1);
      if (planned.ok) await answer(planned.seq, said(99 - i, T + 60_000), T + 10 * (i + 1));
    }
    // The probe at T and four more: full until the probe's send leaves the window.
    expect(frees).toEqual([3, 2, 1, 0]);
    expect(await store.reserve('k', T + 50)).toEqual({
      ok: false,
      room: { free: 0, until: T + 1_000, wait: 'window' },
    });
    expect((await store.reserve('k', T + 1_000)).ok).toBe(true);
    await store.close();
  });

  it('ignores an answer older than the one the gate came from', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(40, T + 1_000), T);
    const a = seqOf(await store.reserve('k', T));
    const b = seqOf(await store.reserve('k', T));
    await answer(b, said(0, T + 1_000), T + 2);
    await answer(a, said(30, T + 1_000), T + 3);
    expect(await store.reserve('k', T + 4)).toEqual({ ok: false, room: { free: 0, until: T + 1_000, wait: 'gate' } });
    await store.close();
  });

  it('gives back the place of an older request the gate counted twice: in its Remaining and as in flight', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(40, T + 1_000), T);
    const a = seqOf(await store.reserve('k', T));
    const b = seqOf(await store.reserve('k', T));
    // b's answer: 1 left, and a still out, so nothing (a reached the upstream first, and that 1 counted it).
    await answer(b, said(1, T + 1_000), T + 2);
    expect(await store.reserve('k', T + 2)).toEqual({ ok: false, room: { free: 0, until: T + 1_000, wait: 'gate' } });
    // a's answer says so: it had 2 left in the same window. Its place comes back; only that one.
    await answer(a, said(2, T + 1_000), T + 3);
    expect(await store.reserve('k', T + 4)).toMatchObject({ ok: true });
    expect(await store.reserve('k', T + 4)).toMatchObject({ ok: false, room: { wait: expect.any(String) } });
    await store.close();
  });

  it('gives a request never sent its place in the windows back; one that may have left keeps it', async () => {
    await open(FIVE_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(100, T + 60_000), T);
    for (let i = 1; i <= 2; i++) await answer(seqOf(await store.reserve('k', T + i)), said(100 - i, T + 60_000), T + i);
    const broke = seqOf(await store.reserve('k', T + 10));
    await store.release('k', broke, T + 11, store.epoch);
    const unsent = seqOf(await store.reserve('k', T + 20));
    expect(await store.reserve('k', T + 20)).toEqual({
      ok: false,
      room: { free: 0, until: T + 1_000, wait: 'window' },
    });
    await store.release('k', unsent, T + 21, store.epoch, T + 20);
    // Its place is free again at once; the one that broke after it was written still holds its own.
    expect(await store.reserve('k', T + 22)).toMatchObject({
      ok: true,
      room: { free: 0, until: T + 1_000, wait: 'window' },
    });
    await store.close();
  });

  it("gives a request never sent its part of the upstream's Remaining back; one that may have left keeps it", async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(2, T + 1_000), T);
    await store.release('k', seqOf(await store.reserve('k', T + 1)), T + 2, store.epoch, T + 1);
    // Still 2 left: one at a time (so few left), each of which broke once written.
    for (let i = 0; i < 2; i++) await store.release('k', seqOf(await store.reserve('k', T + 3)), T + 4, store.epoch);
    expect(await store.reserve('k', T + 5)).toEqual({ ok: false, room: { free: 0, until: T + 1_000, wait: 'gate' } });
    await store.close();
  });

  it('after a 429 plans nothing until Retry-After, then probes again; without one, backs off from 1 s', async () => {
    await open(FIVE_PER_SECOND);
    const first = seqOf(await store.reserve('k', T));
    expect(await answer(first, tooMany(3_000), T + 10)).toMatchObject({ pauseMs: 3_000 });
    expect(await store.reserve('k', T + 20)).toEqual({
      ok: false,
      room: { free: 0, until: T + 3_010, wait: 'paused' },
    });
    const probe = seqOf(await store.reserve('k', T + 3_010));
    expect((await store.reserve('k', T + 3_010)).ok).toBe(false);
    // Retry-After 0 (or absent, or past): 1 s, then 2 s for the next 429 in a row.
    expect(await answer(probe, tooMany(0), T + 3_020)).toMatchObject({ pauseMs: 2_000 });
    await store.close();
  });

  it('with throttling off (no windows) honours only the pause', async () => {
    await open([]);
    let seq = 0;
    for (let i = 0; i < 20; i++) seq = seqOf(await store.reserve('k', T));
    expect(await answer(seq, tooMany(2_000), T)).toMatchObject({ pauseMs: 2_000 });
    expect(await store.reserve('k', T + 1)).toEqual({ ok: false, room: { free: 0, until: T + 2_000, wait: 'paused' } });
    expect((await store.reserve('k', T + 2_000)).ok).toBe(true);
    await store.close();
  });

  it('keeps keys apart', async () => {
    await open(FIVE_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(0, T + 30_000, 5), T);
    expect((await store.reserve('other', T)).ok).toBe(true);
    await store.close();
  });

  it('is not opened by an answer without rate-limit headers: the next request is another probe', async () => {
    await open(FIVE_PER_SECOND);
    const probe = seqOf(await store.reserve('k', T));
    expect((await answer(probe, bare, T + 1)).view).toMatchObject({ limit: 5, remaining: 4 });
    expect(await store.reserve('k', T + 2)).toMatchObject({ ok: true });
    expect(await store.reserve('k', T + 2)).toMatchObject({ ok: false, room: { wait: 'answer' } });
    await store.close();
  });

  it('keeps a known gate across an answer without headers', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(7, T + 1_000), T);
    const headerless = seqOf(await store.reserve('k', T + 1));
    expect((await answer(headerless, bare, T + 2)).view).toEqual({
      limit: 100,
      remaining: 6,
      used: 94,
      resetAt: T + 1_000,
    });
    await store.close();
  });

  it('lets the next request probe at once when a probe got no answer', async () => {
    await open(FIVE_PER_SECOND);
    const probe = seqOf(await store.reserve('k', T));
    await store.release('k', probe, T + 1, store.epoch);
    expect(await store.reserve('k', T + 1)).toMatchObject({ ok: true });
    await store.close();
  });

  it('lets a 429 to a request planned before the pause lengthen it, but not start a second probe', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(50, T + 1_000), T);
    const a = seqOf(await store.reserve('k', T));
    const b = seqOf(await store.reserve('k', T));
    await answer(a, tooMany(999), T + 1);
    // b was sent before the pause: its 429 lengthens the pause, as a second 429 in a row.
    expect(await answer(b, tooMany(2_500), T + 6)).toMatchObject({ pauseMs: 2_500 });
    expect(await store.reserve('k', T + 7)).toMatchObject({ ok: false, room: { until: T + 2_506, wait: 'paused' } });
    expect(await store.reserve('k', T + 2_506)).toMatchObject({ ok: true });
    expect(await store.reserve('k', T + 2_506)).toMatchObject({ ok: false, room: { wait: 'answer' } });
    await store.close();
  });

  it('counts a burst that got no answer as one strike: the answers the pause overtook do not double it', async () => {
    await open(HUNDRED_PER_SECOND);
    await answer(seqOf(await store.reserve('k', T)), said(50, T + 60_000), T);
    const burst = [
      seqOf(await store.reserve('k', T)),
      seqOf(await store.reserve('k', T)),
      seqOf(await store.reserve('k', T)),
    ];
    const silence = { ...bare, status: NO_ANSWER };
    for (const [i, seq] of burst.entries()) {
      expect(await answer(seq, silence, T + 1 + i)).toMatchObject({ pauseMs: 1_000 });
    }
    expect(await store.reserve('k', T + 1_002)).toMatchObject({
      ok: false,
      room: { until: T + 1_003, wait: 'paused' },
    });
    // The probe after it is the second strike in a row.
    const probe = seqOf(await store.reserve('k', T + 1_003));
    expect(await answer(probe, silence, T + 1_004)).toMatchObject({ pauseMs: 2_000 });
    await store.close();
  });

  it('starts slow: a few in flight, more as the upstream shows it counts, half after a 429', async () => {
    await open(HUNDRED_PER_SECOND);
    let remaining = 90;
    await answer(seqOf(await store.reserve('k', T)), said(remaining, T + 60_000), T);
    const out: number[] = [];
    const inFlightNow = async () => {
      for (let r = await store.reserve('k', T + 1); r.ok; r = await store.reserve('k', T + 1)) out.push(r.seq);
      return out.length;
    };
    // Nothing proves yet that its Remaining counts our sends.
    expect(await inFlightNow()).toBe(SAFE_CWND);
    // Answers whose Remaining falls by one each: the window grows by one with each.
    for (const seq of out.splice(0, 3)) await answer(seq, said(--remaining, T + 60_000), T + 2);
    expect(await inFlightNow()).toBe(SAFE_CWND + 3);
    await answer(out.shift() as number, tooMany(1_000), T + 3);
    for (const seq of out.splice(0)) await store.release('k', seq, T + 4, store.epoch);
    await answer(seqOf(await store.reserve('k', T + 1_003)), said(50, T + 60_000), T + 1_004);
    expect(await inFlightNow()).toBeLessThanOrEqual(SAFE_CWND);
    await store.close();
  });

  it('keeps at most SAFE_CWND in flight for an upstream whose Remaining never moves', async () => {
    await open(HUNDRED_PER_SECOND);
    const out: number[] = [];
    for (let round = 0; round < 5; round++) {
      for (let r = await store.reserve('k', T + round); r.ok; r = await store.reserve('k', T + round)) out.push(r.seq);
      expect(out.length).toBeLessThanOrEqual(SAFE_CWND);
      for (const seq of out.splice(0)) await answer(seq, said(99, T + 60_000), T + round);
    }
    await store.close();
  });

  it('forgets a key the upstream refused', async () => {
    await open(FIVE_PER_SECOND);
    seqOf(await store.reserve('k', T));
    await store.forget('k');
    expect(await store.reserve('k', T + 1)).toMatchObject({ ok: true, seq: 1 });
    await store.close();
  });
});
