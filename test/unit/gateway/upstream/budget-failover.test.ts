/**
 * The Redis budget between replicas: a request waiting on another replica's answer is told of it,
 * not polling. And across a loss of Redis (an outage, or the seconds of a failover), against a real
 * redis-server started on a free port and stopped by its pid. One replica reaches Redis through a
 * TCP proxy on loopback that a test cuts (the one fake: a partition cannot be made otherwise without
 * root), the other directly. What a replica plans while cut off must not overspend what the replicas
 * had already spent, and when it is back, what Redis holds (which a failover may have left older than
 * what happened) is fenced.
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { RateWindow, RedisTarget } from '../../../../src/config.js';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import { RedisBudgetStore } from '../../../../src/gateway/upstream/limits/budget-redis.js';
import { createLimiter } from '../../../../src/gateway/upstream/limits/limiter.js';
import { createSlots } from '../../../../src/gateway/upstream/limits/slots.js';
import { createOperation } from '../../../../src/gateway/upstream/operation.js';
import { createRedisConnection } from '../../../../src/gateway/upstream/redis-connection.js';
import type { UpstreamResponse } from '../../../../src/gateway/upstream/response.js';
import { redisBehindProxy } from '../../../helpers/redis-behind-proxy.js';
import { until } from '../../../helpers/until.js';
import { upstreamCall } from '../../../helpers/upstream-call.js';

const TEN_PER_TWO_SECONDS: RateWindow[] = [{ count: 10, windowMs: 2_000 }];
const shared = redisBehindProxy();
const { closers } = shared;
let run = 0;
afterEach(async () => {
  if (partitioned) await heal();
});
let partitioned = false;
async function cut(): Promise<void> {
  await shared.proxy.cut();
  partitioned = true;
}
async function heal(): Promise<void> {
  await shared.proxy.heal();
  partitioned = false;
}

/** Two replicas of one prefix: `cutOff` through the proxy, `direct` straight to Redis; both counted. */
async function replicas(drainMs?: number): Promise<{ cutOff: RedisBudgetStore; direct: RedisBudgetStore }> {
  const prefix = `failover-unit-${run++}`;
  const make = (url: string) => {
    const target: RedisTarget = { mode: 'single', url, auth: {}, tls: false };
    const connection = createRedisConnection(target);
    const subscriber = createRedisConnection(target, { offlineQueue: true });
    const logger = createLogger('silent');
    const store = new RedisBudgetStore({ connection, subscriber, logger, prefix, ...(drainMs ? { drainMs } : {}) });
    closers.push(async () => {
      await store.close();
      connection.close();
      subscriber.close();
    });
    return store;
  };
  const cutOff = make(`redis://127.0.0.1:${shared.proxy.port}`);
  const direct = make(shared.redis.url);
  await cutOff.ready();
  await direct.ready();
  await cutOff.ready(); // its heartbeat now counts both
  expect(cutOff.replicas).toBe(2);
  return { cutOff, direct };
}

/** Reserves, sends and answers as an upstream with `remaining` left until `resetAt`. */
async function send(store: RedisBudgetStore, remaining: number, resetAt: number) {
  const now = Date.now();
  const reservation = await store.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100);
  if (!reservation.ok) return reservation;
  await store.observe('k', { seq: reservation.seq, limit: 10, remaining, resetAt }, now);
  return reservation;
}

/**
 * How many sends a store plans now (none waiting), up to 20, each answered without rate-limit
 * headers (what was known stands) so the last few of a window need not go one at a time.
 */
async function plannable(store: RedisBudgetStore): Promise<number> {
  for (let n = 0; n < 20; n++) {
    const now = Date.now();
    const reservation = await store.reserve('k', TEN_PER_TWO_SECONDS, now, now);
    if (!reservation.ok) return n;
    await store.observe('k', { seq: reservation.seq, limit: 0, remaining: 0, resetAt: 0 }, now);
  }
  return 20;
}

describe('the Redis budget between replicas', () => {
  it('tells a replica waiting on another one probe of its answer, once it is recorded', async () => {
    const { cutOff: prober, direct: waiter } = await replicas();
    const heard: string[] = [];
    waiter.watch((keyId) => heard.push(keyId));
    await until('the waiter subscribed', () => waiter.notifies, { timeoutMs: 3_000, everyMs: 20 });
    const now = Date.now();
    const probe = await prober.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100);
    expect(probe).toMatchObject({ ok: true });
    expect(await waiter.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100)).toMatchObject({ ok: false, probing: true });
    // An answer nobody waits on is not published; this one is, once.
    await prober.observe(
      'k',
      { seq: (probe as { seq: number }).seq, limit: 10, remaining: 9, resetAt: now + 2_000 },
      now,
    );
    await until('the answer published', () => heard.length > 0, { timeoutMs: 3_000, everyMs: 10 });
    // Once: a second publication would have come with the first.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heard).toEqual(['k']);
    expect(await waiter.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100)).toMatchObject({ ok: true });
  });
});

describe('the Redis budget when Redis is lost', () => {
  it('plans nothing into a window the replicas had spent', async () => {
    const { cutOff } = await replicas();
    const resetAt = Date.now() + 3_000;
    expect(await send(cutOff, 9, resetAt)).toMatchObject({ ok: true });
    for (let left = 8; left >= 0; left--) expect(await send(cutOff, left, resetAt)).toMatchObject({ ok: true });
    await cut();
    // A fresh local budget would send a probe here, into the upstream's spent window: a 429.
    expect(await plannable(cutOff)).toBe(0);
    expect(cutOff.degraded).toBe(true);
  });

  it('plans nothing new before the Reset, however much was left, then its 1/N of the window', async () => {
    const { cutOff } = await replicas();
    // Far enough that the checks before it are done by then on a loaded machine.
    const resetAt = Date.now() + 1_000;
    expect(await send(cutOff, 9, resetAt)).toMatchObject({ ok: true });
    expect(await send(cutOff, 8, resetAt)).toMatchObject({ ok: true });
    await cut();
    // 8 left when this replica last asked; the other may have planned them since.
    expect(await plannable(cutOff)).toBe(0);
    // An answer to a send planned on the shared budget does not reopen the window either.
    await cutOff.observe('k', { seq: 2, limit: 10, remaining: 8, resetAt }, Date.now());
    expect(await plannable(cutOff)).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, resetAt - Date.now() + 20));
    // A new window: probes (answered without headers, so each gives way to the next), 5 of 10 for 1 of 2 replicas.
    expect(await plannable(cutOff)).toBe(5);
  });

  it('fences the key when it is back: the pause it knows asserted again, the next send one probe', async () => {
    const { cutOff, direct } = await replicas();
    const resetAt = Date.now() + 3_000;
    expect(await send(cutOff, 9, resetAt)).toMatchObject({ ok: true });
    await cut();
    // A 429 while cut off: only this replica knows of its pause.
    const pausedUntil = Date.now() + 1_500;
    await cutOff.pause('k', pausedUntil, 99);
    expect(await direct.pausedUntil('k')).toBe(0);
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 50 });
    expect(await direct.pausedUntil('k')).toBe(pausedUntil);
    // The gate Redis held (Remaining 9, from before) is dropped: after the pause, one probe, then its answer.
    const after = pausedUntil + 1;
    expect(await direct.reserve('k', TEN_PER_TWO_SECONDS, after, after + 10_000)).toMatchObject({ ok: true });
    expect(await direct.reserve('k', TEN_PER_TWO_SECONDS, after, after + 10_000)).toMatchObject({
      ok: false,
      probing: true,
    });
  });
});

describe('the fence on rejoin', () => {
  it("takes off only this replica's requests in flight: another replica's request still out keeps counting", async () => {
    const { cutOff, direct } = await replicas();
    const WIDE: RateWindow[] = [{ count: 100, windowMs: 10_000 }];
    const resetAt = Date.now() + 10_000;
    // The cut-off replica learns the key's window, so it fences the key when it is back.
    expect(await send(cutOff, 9, resetAt)).toMatchObject({ ok: true });
    // The other replica sends a request that stays out.
    const now = Date.now();
    const out = await direct.reserve('k', WIDE, now, now + 100);
    expect(out).toMatchObject({ ok: true });
    await cut();
    await cutOff.pausedUntil('k'); // a command that fails: the replica plans on its local share
    expect(cutOff.degraded).toBe(true);
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 50 });
    // Fenced: the next send is one probe, and a probe goes alone, so it waits for the request still
    // out. Had the fence taken that request off, the probe would go beside it.
    const at = Date.now();
    expect(await direct.reserve('k', WIDE, at, at + 100)).toMatchObject({ ok: false, probing: true });
    await direct.observe('k', { seq: (out as { seq: number }).seq, limit: 100, remaining: 19, resetAt }, at);
    expect(await direct.reserve('k', WIDE, at, at + 100)).toMatchObject({ ok: true });
  });
});

describe('the fence on rejoin, after Redis stalled', () => {
  it('takes off the reservation Redis ran after this replica gave up on it', async () => {
    const { cutOff, direct } = await replicas();
    // Redis stalls (no disconnect): the reservation times out after 1 s and the replica plans on its
    // local share; Redis runs it when it wakes, a probe of a key nobody will answer.
    const sleeping = shared.redis.cli('DEBUG', 'SLEEP', '1.5');
    await new Promise((resolve) => setTimeout(resolve, 300)); // redis-cli started, and Redis asleep
    const now = Date.now();
    const local = await direct.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100);
    expect(direct.degraded).toBe(true);
    await sleeping;
    await direct.observe('k', { seq: (local as { seq: number }).seq, limit: 0, remaining: 0, resetAt: 0 }, Date.now());
    await until('the replica back on Redis', () => !direct.degraded, { timeoutMs: 5_000, everyMs: 50 });
    // Left in flight, that probe would hold the key's next probe for its whole in-flight time (60 s).
    const at = Date.now();
    expect(await cutOff.reserve('k', TEN_PER_TWO_SECONDS, at, at + 100)).toMatchObject({ ok: true });
  });

  it('gives back a reservation Redis answers after the replica moved to its local share', async () => {
    const { cutOff, direct } = await replicas();
    const sleeping = shared.redis.cli('DEBUG', 'SLEEP', '1.6');
    await new Promise((resolve) => setTimeout(resolve, 400)); // redis-cli started, and Redis asleep
    const reserve = (key: string) => {
      const now = Date.now();
      return direct.reserve(key, TEN_PER_TWO_SECONDS, now, now + 100);
    };
    // Times out after 1 s: the replica plans on its local share from then on (its request answered there).
    const first = reserve('a').then(async (local) => {
      await direct.observe(
        'a',
        { seq: (local as { seq: number }).seq, limit: 0, remaining: 0, resetAt: 0 },
        Date.now(),
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 700));
    // Sent to Redis before that, answered when it wakes: a probe of 'b' planned on a budget that moved.
    const late = reserve('b');
    await first;
    expect(await late).toEqual({ ok: false, retryAt: expect.any(Number) });
    await sleeping;
    await until('the replica back on Redis', () => !direct.degraded, { timeoutMs: 5_000, everyMs: 50 });
    // Given back: kept, its probe would hold the key's next one until it expired.
    const at = Date.now();
    expect(await cutOff.reserve('b', TEN_PER_TWO_SECONDS, at, at + 100)).toMatchObject({ ok: true });
  });
});

describe('the way back to Redis', () => {
  it('plans nothing on Redis in a window the local share planned into, until its Reset', async () => {
    const { cutOff, direct } = await replicas();
    // Known before the cut: a window that ends at once, so the local share may plan after it.
    expect(await send(cutOff, 9, Date.now() + 100)).toMatchObject({ ok: true });
    await cut();
    await cutOff.pausedUntil('k'); // a command that fails: the replica plans on its local share
    await new Promise((resolve) => setTimeout(resolve, 150));
    // The local share's probe, answered: 7 left in a window that ends in 3 s.
    const resetAt = Date.now() + 3_000;
    expect(await send(cutOff, 7, resetAt)).toMatchObject({ ok: true });
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 50 });
    // Redis holds none of that window's sends, and those still out would miss a probe's Remaining:
    // neither replica plans into it; from its Reset on, one probe.
    expect(await direct.pausedUntil('k')).toBe(resetAt);
    expect(await plannable(cutOff)).toBe(0);
    expect(await plannable(direct)).toBe(0);
  });

  it('waits for the requests planned on the local share before it moves, and plans nothing meanwhile', async () => {
    const { cutOff } = await replicas();
    await cut();
    await cutOff.pausedUntil('k');
    expect(cutOff.degraded).toBe(true);
    const now = Date.now();
    const out = await cutOff.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100);
    expect(out).toMatchObject({ ok: true });
    await heal();
    // Redis answers (the rejoin probe runs every 250 ms), but the request is still out.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(cutOff.degraded).toBe(true);
    const at = Date.now();
    // A key never used before: the local share would send its probe at once, were it still planning.
    expect(await cutOff.reserve('unused', TEN_PER_TWO_SECONDS, at, at + 100)).toEqual({
      ok: false,
      retryAt: expect.any(Number),
    });
    const resetAt = Date.now() + 3_000;
    await cutOff.observe('k', { seq: (out as { seq: number }).seq, limit: 10, remaining: 8, resetAt }, Date.now());
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 50 });
    expect(await cutOff.pausedUntil('k')).toBe(resetAt);
  });
});

describe('the way back to Redis, cut short', () => {
  it('plans on the local share again when Redis is lost while it waits for the requests out', async () => {
    const { cutOff } = await replicas();
    await cut();
    await cutOff.pausedUntil('k');
    const now = Date.now();
    expect(await cutOff.reserve('k', TEN_PER_TWO_SECONDS, now, now + 100)).toMatchObject({ ok: true });
    // A key never used before: the local share would plan its probe at once, unless it plans nothing.
    let fresh = 0;
    const plansNow = async () => {
      const at = Date.now();
      return (await cutOff.reserve(`fresh-${fresh++}`, TEN_PER_TWO_SECONDS, at, at)).ok;
    };
    await heal();
    await until('Redis answers, and the replica waits for the request out', async () => !(await plansNow()), {
      timeoutMs: 3_000,
      everyMs: 50,
    });
    await cut();
    await until('the local share plans again', plansNow, { timeoutMs: 3_000, everyMs: 50 });
    expect(cutOff.degraded).toBe(true);
  });
});

describe('the limiter when the budget moves while requests are out', () => {
  it('records a late answer only on the store that planned it: one planned on the local share cannot free a probe on a Redis that lost everything', async () => {
    // It moves back to Redis 200 ms after Redis answers even with the local share's request still out.
    const { cutOff } = await replicas(200);
    const limiter = createLimiter({
      windows: [{ count: 10, windowMs: 60_000 }],
      store: cutOff,
      slots: createSlots({ total: 8, perKey: 8, maxQueuedPerClient: 8 }),
      maxRetryAfterMs: 60_000,
    });
    closers.push(() => limiter.close());
    // The upstream: every request sent waits for the test to answer it (without rate-limit headers).
    const answers: ((response: UpstreamResponse) => void)[] = [];
    const send = limiter.stage(() => new Promise<UpstreamResponse>((resolve) => answers.push(resolve)));
    const sent = async (count: number) => {
      const deadline = Date.now() + 5_000;
      while (answers.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      return answers.length;
    };
    const OK: UpstreamResponse = { status: 200, headers: {}, body: '[]' };

    // Cut off: planned on the local share, a probe (its number there: 1), and out.
    await cut();
    const local = send(upstreamCall());
    expect(await sent(1)).toBe(1);
    expect(cutOff.degraded).toBe(true);
    // Redis comes back having lost everything (a failover to a primary that had none of it), and the
    // replica rejoins it: the next request is a probe there, numbered 1 again, and out.
    await shared.redis.cli('FLUSHALL');
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 50 });
    const probe = send(upstreamCall());
    expect(await sent(2)).toBe(2);

    // The local share's request answers late. Recorded on Redis as number 1 it would be taken for the
    // probe, whose gate gives way to the next probe: a second request out while the first is.
    answers[0]?.(OK);
    await expect(local).resolves.toBe(OK);
    const operation = createOperation({ logger: createLogger('silent'), maxWaitMs: 300, timeoutMs: 1_000 });
    const waiter = send(upstreamCall({ operation })).catch((error) => error);
    // It waits for the probe's answer (and is refused at its deadline), or, wrongly, it is sent.
    const outcome = await Promise.race([waiter, sent(3).then((count) => `sent: ${count} requests out`)]);
    expect(outcome).toMatchObject({ code: expect.stringMatching(/^(RATE_LIMITED|UNAVAILABLE)$/) });
    expect(answers.length).toBe(2);
    answers[1]?.(OK);
    await expect(probe).resolves.toBe(OK);
  });
});
