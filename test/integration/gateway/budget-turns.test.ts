/**
 * Turns across replicas on Redis (lua/reserve.lua, model.ts CLAIM_MS): two replicas (two tags) of
 * one key against a real redis-server, on times given as numbers. Without turns the replica whose
 * wake-ups come first (a clock ahead, a nearer Redis, a timer made earlier) takes every unit that
 * frees while it has requests waiting; the budget simulation's `across` schedules found a light
 * client of one replica refused 11 times in 11 beside a greedy one on the other.
 */

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, CLAIM_MS, type Plan } from '../../../src/gateway/upstream/limits/model.js';
import { RedisBudget } from '../../../src/gateway/upstream/limits/redis-budget.js';
import { said } from '../../helpers/budget-answers.js';
import { type RedisServer, startRedis } from '../../helpers/redis.js';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const T = 1_800_000_000_000;
/** Two a second: the upstream's word (far more left) never binds, so only the window decides. */
const PLAN: Plan = { windows: [{ count: 2, windowMs: 1_000 }], share: 1 };
let run = 0;

function replicas() {
  const prefix = `turns-${run++}`;
  const make = (tag: string) =>
    new RedisBudget({ client: client as never, prefix, tag, inflightMs: 60_000, channel: `${prefix}:c` });
  return { a: make('aaaa'), b: make('bbbb') };
}

const ok = (now: number): Answer => said(900, now + 60_000, 1_000);

/** Plans one request and answers it at once; whether it was planned. */
async function send(budget: RedisBudget, now: number): Promise<boolean> {
  const planned = await budget.reserve('k', PLAN, now);
  if (planned.ok) await budget.answer('k', planned.seq, ok(now), now, PLAN, false);
  return planned.ok;
}

describe('the Redis budget across replicas', () => {
  it('gives the unit that frees to the replica refused first, and the next to the other', async () => {
    const { a, b } = replicas();
    expect(await send(a, T)).toBe(true);
    expect(await send(b, T + 5)).toBe(true);
    // The window is full: a is refused first (its turn), b after (next).
    expect((await a.reserve('k', PLAN, T + 10)).room).toEqual({ free: 0, until: T + 1_000, wait: 'window' });
    expect((await b.reserve('k', PLAN, T + 20)).ok).toBe(false);
    // b asks first when a's send leaves the window: the unit is a's, and b waits for the one after.
    expect((await b.reserve('k', PLAN, T + 1_000)).room).toEqual({ free: 0, until: T + 1_005, wait: 'window' });
    expect(await send(a, T + 1_001)).toBe(true);
    // Now it is b's turn: a, asking first for the next unit, waits until b's turn ends (the one
    // after it frees later still), in case b does not come.
    expect((await a.reserve('k', PLAN, T + 1_002)).ok).toBe(false);
    expect((await a.reserve('k', PLAN, T + 1_005)).room).toEqual({
      free: 0,
      until: T + 1_005 + CLAIM_MS,
      wait: 'window',
    });
    expect(await send(b, T + 1_006)).toBe(true);
  });

  it('lets the other replica have a unit its turn holder did not come for in time', async () => {
    const { a, b } = replicas();
    expect(await send(a, T)).toBe(true);
    expect(await send(b, T + 500)).toBe(true);
    expect((await a.reserve('k', PLAN, T + 510)).ok).toBe(false);
    // a's send left the window at T + 1,000; a has not come for the unit by CLAIM_MS after.
    expect((await b.reserve('k', PLAN, T + 1_000 + CLAIM_MS - 1)).ok).toBe(false);
    expect(await send(b, T + 1_000 + CLAIM_MS)).toBe(true);
  });

  it('gives the turn of a replica waiting on an answer from the moment the answer comes', async () => {
    const { a, b } = replicas();
    const big: Plan = { windows: [{ count: 100, windowMs: 60_000 }], share: 1 };
    // Three left upstream: one request at a time.
    const few = (now: number): Answer => said(3, now + 60_000);
    const probe = await a.reserve('k', big, T);
    await a.answer('k', probe.seq, few(T), T, big, false);
    const out = await a.reserve('k', big, T + 1);
    expect(out.ok).toBe(true);
    expect((await b.reserve('k', big, T + 2)).room.wait).toBe('answer');
    expect((await a.reserve('k', big, T + 3)).ok).toBe(false);
    // The answer frees the one place: b waited for it first, so a, asking first, waits again.
    await a.answer('k', out.seq, few(T + 100), T + 100, big, false);
    expect((await a.reserve('k', big, T + 100)).ok).toBe(false);
    expect((await b.reserve('k', big, T + 101)).ok).toBe(true);
  });

  it('leaves a unit beside the one held to whoever asks', async () => {
    const { a, b } = replicas();
    const roomy: Plan = { windows: [{ count: 3, windowMs: 1_000 }], share: 1 };
    for (const [budget, at] of [
      [a, T],
      [b, T + 1],
      [a, T + 2],
    ] as const) {
      const planned = await budget.reserve('k', roomy, at);
      await budget.answer('k', planned.seq, ok(at), at, roomy, false);
    }
    expect((await a.reserve('k', roomy, T + 10)).ok).toBe(false);
    // At T + 1,001 two units have left the window: one is a's, the other anyone's.
    expect((await b.reserve('k', roomy, T + 1_001)).ok).toBe(true);
    expect((await b.reserve('k', roomy, T + 1_001)).ok).toBe(false);
    expect((await a.reserve('k', roomy, T + 1_002)).ok).toBe(true);
  });
});
