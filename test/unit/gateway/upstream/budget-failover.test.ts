/**
 * The budget shared through Redis when a replica loses it (src/gateway/upstream/limits/
 * shared-budget.ts), against a real redis-server started on a free port and stopped by its pid. One
 * replica reaches Redis through a TCP proxy on loopback that a test cuts (the one fake: a partition
 * cannot be made otherwise without root), the other directly. Leases are short (a beat every 100 ms,
 * a lease of 300 ms), so each test plays a partition in about a second.
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { RateWindow, RedisTarget } from '../../../../src/config.js';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import type { Reservation } from '../../../../src/gateway/upstream/limits/budget.js';
import { createLimiter } from '../../../../src/gateway/upstream/limits/limiter.js';
import type { Answer } from '../../../../src/gateway/upstream/limits/model.js';
import { SharedBudgetStore } from '../../../../src/gateway/upstream/limits/shared-budget.js';
import { createSlots } from '../../../../src/gateway/upstream/limits/slots.js';
import { createOperation } from '../../../../src/gateway/upstream/operation.js';
import { createRedisConnection } from '../../../../src/gateway/upstream/redis/connection.js';
import type { UpstreamResponse } from '../../../../src/gateway/upstream/response.js';
import { redisBehindProxy } from '../../../helpers/redis-behind-proxy.js';
import { until } from '../../../helpers/until.js';
import { upstreamCall } from '../../../helpers/upstream-call.js';

const TEN_PER_TEN_SECONDS: RateWindow[] = [{ count: 10, windowMs: 10_000 }];
const BEAT_MS = 100;
const LEASE_MS = 300;
const shared = redisBehindProxy();
const { closers } = shared;
let run = 0;
let partitioned = false;
afterEach(async () => {
  if (partitioned) await heal();
});
async function cut(): Promise<void> {
  await shared.proxy.cut();
  partitioned = true;
}
async function heal(): Promise<void> {
  await shared.proxy.heal();
  partitioned = false;
}

/** Two replicas of one prefix: `cutOff` through the proxy, `direct` straight to Redis; both counted. */
async function replicas(windows = TEN_PER_TEN_SECONDS) {
  const prefix = `failover-unit-${run++}`;
  const make = (url: string) => {
    const target: RedisTarget = { mode: 'single', url, auth: {}, tls: false };
    const connection = createRedisConnection(target);
    const subscriber = createRedisConnection(target, { offlineQueue: true });
    const store = new SharedBudgetStore({
      client: connection.client,
      subscriber: subscriber.client,
      prefix,
      plan: { windows, share: 1 },
      now: () => Date.now(),
      logger: createLogger('silent'),
      inflightMs: 60_000,
      beatMs: BEAT_MS,
      leaseMs: LEASE_MS,
    });
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
  await until('each counts both', () => cutOff.replicas === 2 && direct.replicas === 2, {
    timeoutMs: 3_000,
    everyMs: 20,
  });
  return { cutOff, direct };
}

const said = (remaining: number, resetAt: number): Answer => ({
  status: 200,
  word: { limit: 10, remaining, resetAt },
  retryAfterMs: undefined,
  jitter: 0,
});

/** Plans, sends and answers as an upstream with `remaining` left until `resetAt`. */
async function send(store: SharedBudgetStore, remaining: number, resetAt: number): Promise<Reservation> {
  const now = Date.now();
  const planned = await store.reserve('k', now);
  if (planned.ok) await store.answer('k', planned.seq, said(remaining, resetAt), now, planned.epoch);
  return planned;
}

/** How many requests a store plans now, up to 20, each answered with `remaining` falling from 99 (the gate never binds). */
async function plannable(store: SharedBudgetStore): Promise<number> {
  let n = 0;
  for (; n < 20; n++) {
    const now = Date.now();
    const planned = await store.reserve('k', now);
    if (!planned.ok) return n;
    await store.answer('k', planned.seq, said(99 - n, now + 60_000), now, planned.epoch);
  }
  return n;
}

describe('the Redis budget between replicas', () => {
  it("tells a replica waiting on another one's probe of its answer, once it is recorded", async () => {
    const { cutOff: prober, direct: waiter } = await replicas();
    const heard: string[] = [];
    waiter.watch((keyId) => heard.push(keyId));
    const now = Date.now();
    const probe = await prober.reserve('k', now);
    expect(probe).toMatchObject({ ok: true });
    expect(await waiter.reserve('k', now)).toMatchObject({ ok: false, room: { wait: 'answer' } });
    await prober.answer('k', (probe as { seq: number }).seq, said(9, now + 10_000), now, prober.epoch);
    await until('the answer published', () => heard.length > 0, { timeoutMs: 3_000, everyMs: 10 });
    // Once: a second publication would have come with the first.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heard).toEqual(['k']);
    expect(await waiter.reserve('k', Date.now())).toMatchObject({ ok: true });
  });

  it("tells a replica its own answer left waiting on another one's request when that one is answered", async () => {
    const { cutOff: first, direct: second } = await replicas();
    const heard: string[] = [];
    first.watch((keyId) => heard.push(keyId));
    const resetAt = Date.now() + 60_000;
    // The upstream's word first: plenty left, so two go at once.
    expect(await send(first, 50, resetAt)).toMatchObject({ ok: true });
    const theirs = await second.reserve('k', Date.now());
    const mine = await first.reserve('k', Date.now());
    expect([theirs.ok, mine.ok]).toEqual([true, true]);
    // Three left: one at a time, so the first replica's next request waits on the second's answer.
    const recorded = await first.answer(
      'k',
      (mine as { seq: number }).seq,
      said(3, resetAt),
      Date.now(),
      first.epoch,
      true,
    );
    expect(recorded.room).toMatchObject({ free: 0, wait: 'answer' });
    await second.answer('k', (theirs as { seq: number }).seq, said(2, resetAt), Date.now(), second.epoch);
    await until('the answer published', () => heard.length > 0, { timeoutMs: 3_000, everyMs: 10 });
    expect(await first.reserve('k', Date.now())).toMatchObject({ ok: true });
  });
});

describe('the Redis budget when one replica is cut off', () => {
  it('plans on its local share once its lease has lapsed for the others, from what it knew was left', async () => {
    const { cutOff } = await replicas();
    const resetAt = Date.now() + 60_000;
    for (let left = 9; left >= 6; left--) expect(await send(cutOff, left * 10, resetAt)).toMatchObject({ ok: true });
    await cut();
    // The first command after the cut fails: the replica moves to its local share, which waits for
    // the lease to lapse in the other replica's eyes.
    const early = await cutOff.reserve('k', Date.now());
    expect(cutOff.degraded).toBe(true);
    expect(early).toMatchObject({ ok: false, room: { wait: 'window' } });
    await new Promise((resolve) =>
      setTimeout(resolve, (early as { room: { until: number } }).room.until - Date.now() + 5),
    );
    // Its share: half of the window's 10, of which it knew 4 were sent (2 of them its part): 3.
    // (The first is a probe, its answer the upstream's word for the local share.)
    expect(await plannable(cutOff)).toBe(3);
  });

  it('while it is away the other keeps its share out, and nobody is refused while the plan has room', async () => {
    const { cutOff, direct } = await replicas();
    await cut();
    await cutOff.reserve('other', Date.now()); // a command that fails: the replica is away
    // Its lease lapses, and the other notices at its next beat.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 2 * BEAT_MS));
    // Of 10, the cut-off replica's half is kept out: 5 for the one on Redis.
    expect(await plannable(direct)).toBe(5);
  });

  it('back on Redis, adds what it sent to the shared log and goes on: no fence, no pause', async () => {
    const { cutOff, direct } = await replicas();
    await cut();
    const first = await cutOff.reserve('k', Date.now());
    const { until: localFrom } = (first as { room: { until: number } }).room;
    await new Promise((resolve) => setTimeout(resolve, localFrom - Date.now() + 5));
    expect(await plannable(cutOff)).toBe(5);
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 20 });
    await until('both hold a lease again', () => direct.replicas === 2, { timeoutMs: 2_000, everyMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 2 * BEAT_MS));
    // The 5 sends of the local share are in the window: 5 more, shared (the first a probe, since the
    // upstream's word may have moved meanwhile), and nothing is paused.
    expect(await plannable(direct)).toBe(5);
  });

  it('carries a pause it saw while cut off to Redis when it is back', async () => {
    const { cutOff, direct } = await replicas();
    await cut();
    const first = await cutOff.reserve('k', Date.now());
    await new Promise((resolve) =>
      setTimeout(resolve, (first as { room: { until: number } }).room.until - Date.now() + 5),
    );
    const planned = await cutOff.reserve('k', Date.now());
    const tooMany: Answer = {
      status: 429,
      word: { limit: 0, remaining: 0, resetAt: 0 },
      retryAfterMs: 3_000,
      jitter: 0,
    };
    const { pauseMs } = await cutOff.answer('k', (planned as { seq: number }).seq, tooMany, Date.now(), cutOff.epoch);
    expect(pauseMs).toBe(3_000);
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 20 });
    expect(await direct.reserve('k', Date.now())).toMatchObject({ ok: false, room: { wait: 'paused' } });
  });
});

describe('the Redis budget after Redis stalled', () => {
  it('takes off, on the way back, the reservation Redis ran after this replica gave up on it', async () => {
    const { cutOff, direct } = await replicas();
    // Redis stalls (no disconnect): the reservation times out after 1 s and the replica plans on its
    // local share; Redis runs it when it wakes, a probe of a key nobody will answer.
    const sleeping = shared.redis.cli('DEBUG', 'SLEEP', '1.5');
    await new Promise((resolve) => setTimeout(resolve, 300)); // redis-cli started, and Redis asleep
    expect(await direct.reserve('k', Date.now())).toMatchObject({ ok: false });
    expect(direct.degraded).toBe(true);
    await sleeping;
    // The other replica lost Redis in the stall too (its beats timed out): it asks Redis only once it
    // is back itself, and its local share refuses while it rejoins.
    await until('both replicas back on Redis', () => !direct.degraded && !cutOff.degraded, {
      timeoutMs: 5_000,
      everyMs: 20,
    });
    // Left in flight, that probe would hold the key's next probe for its whole in-flight time (60 s).
    const next = await cutOff.reserve('k', Date.now());
    expect(next, JSON.stringify(next)).toMatchObject({ ok: true });
  });
});

describe('the limiter when the budget moves while requests are out', () => {
  it('records a late answer only on the store that planned it: one planned on the local share does not free a probe on Redis', async () => {
    const { cutOff } = await replicas();
    const windows = TEN_PER_TEN_SECONDS;
    const limiter = createLimiter({
      windows,
      store: cutOff,
      slots: createSlots({ total: 8, perKey: 8, maxQueuedPerClient: 8 }),
      perKey: 8,
      maxQueuedPerClient: 8,
      maxRetryAfterMs: 60_000,
      now: Date.now,
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

    // Cut off: planned on the local share once the lease has lapsed, a probe there (number 1), and out.
    await cut();
    const local = send(upstreamCall());
    expect(await sent(1)).toBe(1);
    expect(cutOff.degraded).toBe(true);
    // Redis comes back having lost everything (a failover to a primary that had none of it), and the
    // replica rejoins it: the next request is a probe there, numbered 1 again, and out.
    await shared.redis.cli('FLUSHALL');
    await heal();
    await until('the replica back on Redis', () => !cutOff.degraded, { timeoutMs: 5_000, everyMs: 20 });
    const probe = send(upstreamCall());
    expect(await sent(2)).toBe(2);
    // The local share's request answers late. Recorded on Redis as number 1 it would be taken for the
    // probe, whose gate gives way to the next probe: a second request out while the first is.
    answers[0]?.(OK);
    await expect(local).resolves.toBe(OK);
    const operation = createOperation({ logger: createLogger('silent'), maxWaitMs: 300, timeoutMs: 1_000 });
    const waiter = send(upstreamCall({ operation })).catch((error) => error);
    const outcome = await Promise.race([waiter, sent(3).then((count) => `sent: ${count} requests out`)]);
    expect(outcome).toMatchObject({ code: expect.stringMatching(/^(RATE_LIMITED|UNAVAILABLE)$/) });
    expect(answers.length).toBe(2);
    answers[1]?.(OK);
    await expect(probe).resolves.toBe(OK);
  });
});
