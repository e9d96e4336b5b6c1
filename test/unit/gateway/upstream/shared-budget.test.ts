/**
 * The budget shared through Redis (src/gateway/upstream/limits/shared-budget.ts), on its own logic,
 * while Redis answers and once it is lost: leases, the local share (when it may plan, its size, what
 * it starts from), what it learnt of each key, epochs. Redis is faked (test/helpers/
 * fake-budget-redis.ts says how and why); shared-budget-back.test.ts has the way back.
 */

import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import type { Plan } from '../../../../src/gateway/upstream/limits/model.js';
import {
  BEAT_MS,
  closeStores,
  comeBack,
  LEASE_MS,
  LOCAL_FROM,
  loseRedis,
  MINUTE,
  open,
  PLAN,
  plannable,
  refusal,
  said,
  seqOf,
  shared,
  started,
  T,
  tooMany,
} from '../../../helpers/fake-budget-redis.js';
import { until } from '../../../helpers/until.js';

afterEach(closeStores);

describe('the shared budget while Redis answers', () => {
  it('counts the replicas holding a lease and those away, as its beat reads them', async () => {
    const { store, redis } = await started({}, { alive: 3, away: 2 });
    expect(store.replicas).toBe(5);
    expect(store.degraded).toBe(false);
    // Away for five minutes at most by default, then gone.
    expect(redis.beats).toEqual([{ now: T, leaseMs: LEASE_MS, awayMs: 5 * MINUTE, since: 0 }]);
  });

  it('keeps why its first beat failed for start-up to tell, and forgets it once a beat is answered', async () => {
    const { store, redis } = shared();
    redis.beatFails = true;
    await store.ready();
    expect(store.degraded).toBe(true);
    expect(store.startError).toMatchObject({ message: 'Command timed out' });
    const { store: fine } = await started();
    expect(fine.startError).toBeUndefined();
  });

  it("plans on Redis with the away replicas' local shares kept out, and in full when none is away", async () => {
    const { store, redis } = await started({}, { alive: 2, away: 1 });
    await store.reserve('k', T);
    expect(redis.reserved.at(-1)).toEqual({ keyId: 'k', plan: { ...PLAN, share: 2 / 3 }, now: T });
    redis.member = { alive: 3, away: 0 };
    await store.ready();
    await store.reserve('k', T + 1);
    expect(redis.reserved.at(-1)).toEqual({ keyId: 'k', plan: PLAN, now: T + 1 });
  });

  it('passes on what Redis planned, with the epoch it was planned in, and its refusals as they are', async () => {
    const { store, redis } = await started();
    redis.reply = (keyId, now) =>
      keyId === 'spent'
        ? refusal('gate', now + 5_000)
        : { ok: true, seq: 7, room: { free: 3, until: now, wait: undefined }, used: 2 };
    expect(await store.reserve('k', T)).toEqual({
      ok: true,
      seq: 7,
      room: { free: 3, until: T, wait: undefined },
      epoch: 0,
    });
    expect(await store.reserve('spent', T)).toEqual({ ok: false, room: { free: 0, until: T + 5_000, wait: 'gate' } });
  });

  it('records answers and ends requests on Redis, asking for the room after them unless told not to', async () => {
    const { store, redis } = await started();
    const seq = seqOf(await store.reserve('k', T));
    expect(await store.answer('k', seq, said(50), T + 1, 0)).toEqual({
      pauseMs: 0,
      room: { free: 2, until: T + 1, wait: undefined },
      view: undefined,
    });
    await store.answer('k', seq, said(49), T + 2, 0, false);
    expect(redis.answered).toEqual([
      { keyId: 'k', seq, status: 200, plan: PLAN, wantRoom: true },
      { keyId: 'k', seq, status: 200, plan: PLAN, wantRoom: false },
    ]);
    // Released requests free room someone may be waiting for: the room always comes back.
    expect(await store.release('k', seq, T + 3, 0)).toEqual({ free: 2, until: T + 3, wait: undefined });
    expect(redis.released).toEqual([{ keyId: 'k', seq, now: T + 3, plan: PLAN, wantRoom: true }]);
  });

  it('forgets a refused key on Redis', async () => {
    const { store, redis } = await started();
    await store.forget('k');
    expect(redis.forgotten).toEqual(['k']);
  });

  it("hears other replicas' answers on its own channel only, each listener", async () => {
    const subscribed: string[] = [];
    const subscriber = Object.assign(new EventEmitter(), {
      subscribe: async (channel: string) => subscribed.push(channel),
    });
    const { store, redis } = shared({ subscriber });
    const heard: string[][] = [[], []];
    store.watch((keyId) => heard[0]?.push(keyId));
    store.watch((keyId) => heard[1]?.push(keyId));
    expect(subscribed).toEqual(['p:budget-answered']);
    expect(redis.channel).toBe('p:budget-answered');
    subscriber.emit('message', 'p:budget-answered', 'k');
    subscriber.emit('message', 'q:budget-answered', 'elsewhere');
    expect(heard).toEqual([['k'], ['k']]);
  });

  it('is ready as soon as a connected Redis answers its first beat', async () => {
    const { store, redis } = shared();
    const startedAt = Date.now();
    await store.ready(5_000);
    expect(Date.now() - startedAt).toBeLessThan(2_500);
    expect(redis.beats).toHaveLength(1);
    expect(store.degraded).toBe(false);
  });

  it('waits for a connection still being made, then beats', async () => {
    const { store, redis } = shared();
    redis.connection.status = 'connect';
    setTimeout(() => {
      redis.connection.status = 'ready';
      redis.connection.emit('ready');
    }, 20);
    const startedAt = Date.now();
    await store.ready(5_000);
    expect(Date.now() - startedAt).toBeLessThan(2_500);
    expect(store.degraded).toBe(false);
    expect(store.replicas).toBe(1);
  });

  it('gives up on a Redis that never connects after the time given, and plans locally', async () => {
    const { store, redis } = shared();
    redis.connection.status = 'connect';
    // A real wait: ready() times out on the real clock; 50 ms keeps it short.
    await store.ready(50);
    expect(store.degraded).toBe(true);
    expect(store.epoch).toBe(1);
  });

  it('beats every beatMs until closed', async () => {
    const { store, redis } = shared({ beatMs: 20 });
    // Real waits: the beat is a timer on the real clock, 20 ms apart here.
    await until('two beats', () => redis.beats.length >= 2, { timeoutMs: 2_000, everyMs: 5 });
    await store.close();
    const beats = redis.beats.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(redis.beats.length).toBe(beats);
  });
});

describe('the shared budget when Redis is lost', () => {
  it('moves to the local share when a beat fails, and beats no more there: its lease is to lapse', async () => {
    const { store, redis } = await started();
    redis.beatFails = true;
    await store.ready();
    expect(store.degraded).toBe(true);
    expect(redis.beats).toHaveLength(2);
    redis.beatFails = false;
    await store.ready();
    expect(redis.beats).toHaveLength(2);
  });

  it("waits until its lease has lapsed in the others' eyes, then plans on its local share, in a new epoch", async () => {
    const { store, redis, clock } = await started();
    redis.down = true;
    clock.now = T + 50;
    const notYet = { ok: false, room: { free: 0, until: LOCAL_FROM, wait: 'window' } };
    expect(await store.reserve('k', T + 50)).toEqual(notYet);
    expect(store.degraded).toBe(true);
    expect(await store.reserve('k', LOCAL_FROM - 1)).toEqual(notYet);
    expect(await store.reserve('k', LOCAL_FROM)).toMatchObject({ ok: true, seq: 1, epoch: 1 });
    expect(store.epoch).toBe(1);
  });

  it('counts a lease from the last beat it sent, answered or not: Redis may have run one whose reply it never got', async () => {
    const { store, redis, clock } = await started();
    redis.beatFails = true;
    clock.now = T + 400;
    await store.ready();
    expect(store.degraded).toBe(true);
    // Its lease may hold until T + 400 + LEASE_MS in the others' eyes: not from T.
    const notYet = { ok: false, room: { free: 0, until: LOCAL_FROM + 400, wait: 'window' } };
    expect(await store.reserve('k', LOCAL_FROM)).toEqual(notYet);
    expect(await store.reserve('k', LOCAL_FROM + 400)).toMatchObject({ ok: true, seq: 1 });
  });

  it('stops planning once it has been away awayMs since its last beat', async () => {
    const context = await started({ awayMs: 100_000 });
    expect(context.redis.beats[0]?.awayMs).toBe(100_000);
    await loseRedis(context);
    expect(await context.store.reserve('first', T + 99_999)).toMatchObject({ ok: true });
    expect(await context.store.reserve('second', T + 100_000)).toEqual({
      ok: false,
      room: { free: 0, until: T + 100_000 + BEAT_MS, wait: 'window' },
    });
  });

  it('plans 1/N of each window, N the replicas alive and away at its last beat', async () => {
    const twentyAMinute: Plan = { windows: [{ count: 20, windowMs: MINUTE }], share: 1 };
    const context = await started({ plan: twentyAMinute }, { alive: 3, away: 1 });
    await loseRedis(context);
    expect(await plannable(context.store, 'k', LOCAL_FROM)).toEqual({
      planned: 5,
      refused: { free: 0, until: LOCAL_FROM + MINUTE, wait: 'window' },
    });
  });

  it('starts a key from its part of the sends Redis last saw in its windows, placed when Redis saw them', async () => {
    const context = await started({}, { alive: 2, away: 0 });
    context.redis.reply = (_keyId, now) => ({
      ok: true,
      seq: 1,
      room: { free: 4, until: now, wait: undefined },
      used: 5,
    });
    await context.store.reserve('k', T + 10);
    // A refusal says nothing of the windows' sends: what the last reservation saw stands.
    context.redis.reply = (_keyId, now) => refusal('answer', now + 5_000);
    await context.store.reserve('k', T + 20);
    await loseRedis(context);
    // Of 10 a minute, this replica's half is 5; its half of the 5 sends Redis saw, rounded up, is 3.
    expect(await plannable(context.store, 'k', LOCAL_FROM)).toEqual({
      planned: 2,
      refused: { free: 0, until: T + 10 + MINUTE, wait: 'window' },
    });
  });

  it.each(['window', 'gate', 'paused'] as const)(
    'holds a key Redis said could not go (%s) until then, and then lets one probe go',
    async (wait) => {
      const context = await started();
      context.redis.reply = () => refusal(wait, T + 50_000);
      await context.store.reserve('k', T);
      await loseRedis(context);
      const { store } = context;
      expect(await store.reserve('k', LOCAL_FROM)).toEqual({
        ok: false,
        room: { free: 0, until: T + 50_000, wait: 'gate' },
      });
      expect(await store.reserve('k', T + 50_000)).toMatchObject({ ok: true });
      expect(await store.reserve('k', T + 50_000)).toMatchObject({ ok: false, room: { wait: 'answer' } });
    },
  );

  it('holds nothing back where Redis only waited on an answer', async () => {
    const context = await started();
    context.redis.reply = () => refusal('answer', T + 50_000);
    await context.store.reserve('k', T);
    await loseRedis(context);
    expect(await context.store.reserve('k', LOCAL_FROM)).toMatchObject({ ok: true });
  });

  it('remembers what Redis said of the keys used last, maxKeys of them', async () => {
    const context = await started({ maxKeys: 2 });
    // Each key's window full, as Redis saw it.
    context.redis.reply = (_keyId, now) => ({
      ok: true,
      seq: 1,
      room: { free: 5, until: now, wait: undefined },
      used: 10,
    });
    for (const keyId of ['a', 'b', 'a', 'c']) await context.store.reserve(keyId, T);
    await loseRedis(context);
    const { store } = context;
    // b, used least recently, was forgotten: the local share knows nothing of it, and probes.
    expect(await store.reserve('b', LOCAL_FROM)).toMatchObject({ ok: true });
    const full = { ok: false, room: { free: 0, until: T + MINUTE, wait: 'window' } };
    expect(await store.reserve('a', LOCAL_FROM)).toEqual(full);
    expect(await store.reserve('c', LOCAL_FROM)).toEqual(full);
  });

  it('holds at most maxKeys keys on the local share, the least recently used forgotten first', async () => {
    const context = await started({ maxKeys: 10 });
    await loseRedis(context);
    const { store } = context;
    for (let i = 0; i <= 10; i++) {
      const now = LOCAL_FROM + i;
      const reservation = await store.reserve(`key-${i}`, now);
      await store.answer(`key-${i}`, seqOf(reservation), said(50), now, store.epoch);
    }
    // Forgotten: its next request is a probe again, numbered 1.
    expect(await store.reserve('key-0', LOCAL_FROM + 11)).toMatchObject({ ok: true, seq: 1 });
    expect(await store.reserve('key-10', LOCAL_FROM + 11)).toMatchObject({ ok: true, seq: 2 });
  });

  it('forgets keys idle for idleMs on the local share', async () => {
    const context = await started({ idleMs: 1_000 });
    await loseRedis(context);
    const { store } = context;
    await store.answer('idle', seqOf(await store.reserve('idle', LOCAL_FROM)), said(50), LOCAL_FROM, store.epoch);
    await store.reserve('new', LOCAL_FROM + 2_000);
    expect(await store.reserve('idle', LOCAL_FROM + 2_000)).toMatchObject({ ok: true, seq: 1 });
  });

  it('records answers, ends requests and forgets keys on the local share', async () => {
    const context = await started();
    context.redis.reply = (_keyId, now) => ({
      ok: true,
      seq: 1,
      room: { free: 5, until: now, wait: undefined },
      used: 10,
    });
    await context.store.reserve('spent', T);
    await loseRedis(context);
    const { store } = context;
    const probe = seqOf(await store.reserve('k', LOCAL_FROM));
    // A probe that got no answer lets the next one go at once.
    expect(await store.release('k', probe, LOCAL_FROM + 1, store.epoch)).toEqual(open(LOCAL_FROM + 1));
    const next = seqOf(await store.reserve('k', LOCAL_FROM + 1));
    expect(await store.answer('k', next, tooMany(5_000), LOCAL_FROM + 2, store.epoch)).toMatchObject({
      pauseMs: 5_000,
    });
    expect(await store.reserve('k', LOCAL_FROM + 3)).toEqual({
      ok: false,
      room: { free: 0, until: LOCAL_FROM + 5_002, wait: 'paused' },
    });
    await store.forget('spent');
    expect(await store.reserve('spent', LOCAL_FROM)).toMatchObject({ ok: true });
  });

  it("records nowhere the answer to a request Redis planned before it was lost, but a 429's pause", async () => {
    const context = await started();
    // Redis had the key's Remaining spent until T + 50 s: the local share starts from that.
    context.redis.reply = () => ({
      ok: true,
      seq: 1,
      room: { free: 0, until: T + 50_000, wait: 'gate' },
      used: 1,
    });
    const planned = await context.store.reserve('k', T);
    await loseRedis(context);
    const { store } = context;
    expect(await store.release('k', seqOf(planned), T + 200, 0)).toEqual(open(T + 200));
    expect(await store.answer('k', seqOf(planned), said(50), LOCAL_FROM, 0)).toEqual({
      pauseMs: 0,
      room: open(LOCAL_FROM),
      view: undefined,
    });
    expect(await store.reserve('k', LOCAL_FROM)).toEqual({
      ok: false,
      room: { free: 0, until: T + 50_000, wait: 'gate' },
    });
    expect(await store.answer('k', seqOf(planned), tooMany(60_000), LOCAL_FROM + 1, 0)).toMatchObject({
      pauseMs: 60_000,
    });
    expect(await store.reserve('k', T + 50_000)).toEqual({
      ok: false,
      room: { free: 0, until: LOCAL_FROM + 60_001, wait: 'paused' },
    });
  });

  it('tells its owner and the operator when the budget leaves Redis and when it is shared again', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const moves: boolean[] = [];
    const context = await started(
      { logger: createLogger('info', destination), onShared: (isShared) => moves.push(isShared) },
      { alive: 3, away: 1 },
    );
    await loseRedis(context);
    expect(moves).toEqual([false]);
    await comeBack(context);
    expect(moves).toEqual([false, true]);
    await until('both lines written', () => lines.length >= 2, { timeoutMs: 2_000, everyMs: 1 });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        reason: 'Connection is closed.',
        share: '1/4',
        inMs: LOCAL_FROM - (T + 50),
        msg: 'Redis unreachable: planning on a local share of the rate-limit budget until it returns',
      }),
      expect.objectContaining({
        level: 30,
        keys: 1,
        msg: 'Redis is back: rate-limit budget shared across replicas again',
      }),
    ]);
  });
});
