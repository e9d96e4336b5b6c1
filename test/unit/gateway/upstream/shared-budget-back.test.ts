/**
 * The budget shared through Redis (src/gateway/upstream/limits/shared-budget.ts) on its way back
 * from the local share: what it tells Redis, which key it asks to learn that Redis is back, and when
 * it stays local. Redis is faked (test/helpers/fake-budget-redis.ts says how and why).
 */

import { afterEach, describe, expect, it } from 'vitest';
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
  refusal,
  said,
  seqOf,
  type shared,
  started,
  T,
  tooMany,
} from '../../../helpers/fake-budget-redis.js';
import { until } from '../../../helpers/until.js';

afterEach(closeStores);

/** Redis is back, and slow to answer the reconciliation: resolves once it began, with what answers it. */
async function rejoinSlowly(redis: ReturnType<typeof shared>['redis']): Promise<() => void> {
  let answer = () => {};
  redis.slow = new Promise((resolve) => {
    answer = () => {
      redis.slow = undefined;
      resolve();
    };
  });
  redis.down = false;
  redis.connection.emit('ready');
  await until('telling Redis', () => redis.reconciled.length > 0, { timeoutMs: 2_000, everyMs: 1 });
  return answer;
}

describe('the shared budget back on Redis', () => {
  it('tells Redis what the local share did and which of its commands failed, then renews its lease', async () => {
    const context = await started();
    const { store, redis, clock } = context;
    const out = seqOf(await store.reserve('out', T));
    // Known to Redis before: its sends then are in the shared log already.
    await store.answer('k', seqOf(await store.reserve('k', T)), said(50), T, 0);
    await loseRedis(context, 'failed', T + 100);
    for (const at of [LOCAL_FROM, LOCAL_FROM + 1]) {
      await store.answer('k', seqOf(await store.reserve('k', at)), said(50), at, store.epoch);
    }
    const last = seqOf(await store.reserve('k', LOCAL_FROM + 2));
    await store.answer('k', last, tooMany(5_000), LOCAL_FROM + 2, store.epoch);
    redis.member = { alive: 3, away: 0 };
    clock.now = LOCAL_FROM + 1_000;
    const before = redis.commands.length;
    await comeBack(context);
    const now = LOCAL_FROM + 1_000;
    expect([...redis.reconciled].sort((a, b) => a.keyId.localeCompare(b.keyId))).toEqual([
      { keyId: 'failed', pausedUntil: 0, sent: [], now, plan: PLAN },
      {
        keyId: 'k',
        pausedUntil: LOCAL_FROM + 5_002,
        sent: [LOCAL_FROM, LOCAL_FROM + 1, LOCAL_FROM + 2],
        now,
        plan: PLAN,
      },
      { keyId: 'out', pausedUntil: 0, sent: [], now, plan: PLAN },
    ]);
    // Its lease is renewed only once Redis holds what it did: no window is planned without its sends.
    expect(redis.commands.slice(before)).toEqual(['reconcile', 'reconcile', 'reconcile', 'beat']);
    // The others count as there once they beat after it came back: they may have lost Redis too.
    expect(redis.beats.at(-1)).toEqual({ now, leaseMs: LEASE_MS, awayMs: 5 * MINUTE, since: now });
    expect(store.replicas).toBe(3);
    expect(store.epoch).toBe(2);
    // The request out on Redis before was planned in another epoch: its answer records nothing now.
    expect(await store.answer('out', out, said(40), now, 0)).toEqual({ pauseMs: 0, room: open(now), view: undefined });
  });

  it('plans nothing on the local share while it tells Redis what it did there, and wakes the keys it held then', async () => {
    const context = await started();
    const { store, redis, clock } = context;
    const woken: string[] = [];
    store.watch((keyId) => woken.push(keyId));
    await loseRedis(context, 'k');
    clock.now = LOCAL_FROM;
    // A probe, then its answer: the local share has room for more.
    await store.answer('k', seqOf(await store.reserve('k', LOCAL_FROM)), said(50), LOCAL_FROM, store.epoch);
    const answer = await rejoinSlowly(redis);
    // Still on the local share, which plans nothing now: what it planned would be told to nobody.
    expect(store.degraded).toBe(true);
    expect(await store.reserve('k', LOCAL_FROM + 1)).toEqual({
      ok: false,
      room: { free: 0, until: LOCAL_FROM + 1 + BEAT_MS, wait: 'window' },
    });
    expect(woken).toEqual([]);
    answer();
    await until('back on Redis', () => !store.degraded, { timeoutMs: 2_000, everyMs: 1 });
    expect(woken).toEqual(['k']);
    expect(redis.reconciled.map(({ sent }) => sent)).toEqual([[LOCAL_FROM]]);
  });

  it('carries to Redis the pause of a 429 answered on the local share while it was telling Redis what it did there', async () => {
    const context = await started();
    const { store, redis, clock } = context;
    await loseRedis(context, 'k');
    clock.now = LOCAL_FROM;
    const out = seqOf(await store.reserve('k', LOCAL_FROM));
    const answer = await rejoinSlowly(redis);
    clock.now = LOCAL_FROM + 10;
    await store.answer('k', out, tooMany(5_000), LOCAL_FROM + 10, 1);
    answer();
    await until('back on Redis', () => !store.degraded, { timeoutMs: 2_000, everyMs: 1 });
    expect(redis.reconciled.map(({ pausedUntil, sent }) => ({ pausedUntil, sent }))).toEqual([
      { pausedUntil: 0, sent: [LOCAL_FROM] },
      { pausedUntil: LOCAL_FROM + 5_010, sent: [] },
    ]);
  });

  it('takes off on the way back only the requests it still had out on Redis', async () => {
    const context = await started();
    const { store, redis } = context;
    redis.reply = (keyId, now) =>
      keyId === 'refused' ? refusal('answer', now + 5_000) : { ok: true, seq: 1, room: open(now), used: 1 };
    const twice = seqOf(await store.reserve('twice', T));
    await store.reserve('twice', T);
    await store.answer('twice', twice, said(50), T, 0);
    for (const keyId of ['answered', 'released']) {
      const seqs = [seqOf(await store.reserve(keyId, T)), seqOf(await store.reserve(keyId, T))];
      for (const seq of seqs) {
        if (keyId === 'answered') await store.answer(keyId, seq, said(50), T, 0);
        else await store.release(keyId, seq, T, 0);
      }
    }
    await store.reserve('refused', T);
    await loseRedis(context, 'failed');
    await comeBack(context);
    expect(redis.reconciled.map(({ keyId }) => keyId).sort()).toEqual(['failed', 'twice']);
  });

  it('carries to Redis the pause of a 429 planned on the local share, ending none of its own requests there', async () => {
    const context = await started();
    const { store, redis, clock } = context;
    await loseRedis(context, 'k');
    const local = await store.reserve('k', LOCAL_FROM);
    clock.now = LOCAL_FROM;
    await comeBack(context);
    const mine = await store.reserve('k', LOCAL_FROM + 1);
    expect(mine).toMatchObject({ ok: true, epoch: 2 });
    // Anything but a 429 to the local share's request has nothing to tell Redis.
    expect(await store.answer('k', seqOf(local), said(50), LOCAL_FROM + 2, 1)).toEqual({
      pauseMs: 0,
      room: open(LOCAL_FROM + 2),
      view: undefined,
    });
    expect(redis.answered).toEqual([]);
    expect(await store.answer('k', seqOf(local), tooMany(5_000), LOCAL_FROM + 3, 1)).toMatchObject({ pauseMs: 5_000 });
    expect(redis.answered).toEqual([{ keyId: 'k', seq: 0, status: 429, plan: PLAN, wantRoom: true }]);
    // Its own request is still out on Redis: were Redis lost now, it would be taken off on the way back.
    redis.reconciled.length = 0;
    await loseRedis(context, 'other', LOCAL_FROM + 4);
    await comeBack(context);
    expect(redis.reconciled.map(({ keyId }) => keyId).sort()).toEqual(['k', 'other']);
  });

  it('asks, to learn that Redis is back, for the key whose command failed', async () => {
    const context = await started();
    await loseRedis(context, 'k');
    context.redis.connection.emit('ready');
    await until('asked', () => context.redis.connection.probed.length > 0, { timeoutMs: 2_000, everyMs: 1 });
    expect(context.redis.connection.probed[0]).toBe('p:{k}:budget');
  });

  it("asks for the replicas' key when only a beat failed", async () => {
    const { store, redis } = await started();
    redis.beatFails = true;
    await store.ready();
    redis.connection.emit('ready');
    await until('asked', () => redis.connection.probed.length > 0, { timeoutMs: 2_000, everyMs: 1 });
    expect(redis.connection.probed[0]).toBe('p:replicas');
  });

  it('stays on the local share while its lease cannot be renewed', async () => {
    const moves: boolean[] = [];
    const context = await started({ onShared: (isShared) => moves.push(isShared) });
    const { store, redis } = context;
    await loseRedis(context);
    redis.beatFails = true;
    const beats = redis.beats.length;
    redis.down = false;
    redis.connection.emit('ready');
    await until('a beat tried', () => redis.beats.length > beats, { timeoutMs: 2_000, everyMs: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.degraded).toBe(true);
    expect(store.epoch).toBe(1);
    expect(moves).toEqual([false]);
    redis.beatFails = false;
    await comeBack(context);
    expect(store.epoch).toBe(2);
    expect(moves).toEqual([false, true]);
  });

  it('reconciles the keys whose command failed, maxKeys of them', async () => {
    for (const [maxKeys, reconciled] of [
      [1, ['a']],
      [undefined, ['a', 'b']],
    ] as const) {
      const context = await started(maxKeys === undefined ? {} : { maxKeys });
      context.redis.down = true;
      // Both sent before either failed.
      await Promise.all([context.store.reserve('a', T), context.store.reserve('b', T)]);
      await comeBack(context);
      expect(context.redis.reconciled.map(({ keyId }) => keyId).sort()).toEqual(reconciled);
    }
  });
});
