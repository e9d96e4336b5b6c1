/**
 * The budget's Lua scripts as src/gateway/upstream/limits/redis-budget.ts runs them on a real
 * redis-server (a free port, stopped by its pid), and their replies as it hands them on: the room
 * (no bound, why nothing may go), the budget's view, the pause, the replicas' leases and the keys
 * it writes. Times are plain numbers passed in.
 */

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateWindow, RedisTarget } from '../../../../src/config.js';
import { type Plan, PROBE_MS } from '../../../../src/gateway/upstream/limits/model.js';
import { LIBRARY, RedisBudget, script } from '../../../../src/gateway/upstream/limits/redis-budget.js';
import { createRedisConnection, type RedisConnection } from '../../../../src/gateway/upstream/redis/connection.js';
import { bare, said, tooMany } from '../../../helpers/budget-answers.js';
import { type RedisServer, startRedis } from '../../../helpers/redis.js';
import { until } from '../../../helpers/until.js';

const T = 1_800_000_000_000;
const plan = (windows: RateWindow[]): Plan => ({ windows, share: 1 });
const NO_WINDOWS = plan([]);
const FIVE_PER_SECOND = plan([{ count: 5, windowMs: 1_000 }]);
const HUNDRED_PER_SECOND = plan([{ count: 100, windowMs: 1_000 }]);

let server: RedisServer;
let connection: RedisConnection;
let subscriber: RedisConnection;
let run = 0;
beforeAll(async () => {
  server = await startRedis();
  const target: RedisTarget = { mode: 'single', url: server.url, auth: {}, tls: false };
  connection = createRedisConnection(target);
  subscriber = createRedisConnection(target, { offlineQueue: true });
  await until('connected', () => connection.client.status === 'ready', { timeoutMs: 10_000, everyMs: 10 });
}, 60_000);
afterAll(async () => {
  connection?.close();
  subscriber?.close();
  await server?.stop();
});

function budget() {
  const prefix = `redis-budget-${run++}`;
  const channel = `${prefix}:answered`;
  const budget = new RedisBudget({ client: connection.client, prefix, tag: 'one', inflightMs: 60_000, channel });
  return { budget, prefix, channel };
}

describe('the budget on Redis', () => {
  it('bounds nothing without windows: the room is infinite, and without the upstream’s word there is no view', async () => {
    const { budget: redis } = budget();
    expect(await redis.reserve('k', NO_WINDOWS, T)).toEqual({
      ok: true,
      seq: 1,
      room: { free: Number.POSITIVE_INFINITY, until: T, wait: undefined },
      used: 0,
    });
    expect(await redis.answer('k', 1, bare, T, NO_WINDOWS, true)).toEqual({
      pauseMs: 0,
      room: { free: Number.POSITIVE_INFINITY, until: T, wait: undefined },
      view: undefined,
    });
    expect(await redis.release('k', 1, T, NO_WINDOWS, true)).toEqual({
      free: Number.POSITIVE_INFINITY,
      until: T,
      wait: undefined,
    });
  });

  it('keeps a released send in the log, unless it was never sent', async () => {
    const { budget: redis } = budget();
    await redis.reserve('k', FIVE_PER_SECOND, T);
    await redis.release('k', 1, T, FIVE_PER_SECOND, true);
    // The upstream may have counted a send that got no answer: the window still holds it.
    const second = await redis.reserve('k', FIVE_PER_SECOND, T);
    expect(second).toMatchObject({ ok: true, seq: 2, used: 2 });
    await redis.release('k', second.seq, T, FIVE_PER_SECOND, true, true);
    expect(await redis.reserve('k', FIVE_PER_SECOND, T)).toMatchObject({ ok: true, seq: 3, used: 2 });
  });

  it('waits on a probe’s answer while the upstream state is unknown', async () => {
    const { budget: redis } = budget();
    const waiting = { free: 0, until: T + PROBE_MS, wait: 'answer' };
    expect(await redis.reserve('k', FIVE_PER_SECOND, T)).toEqual({ ok: true, seq: 1, room: waiting, used: 1 });
    expect(await redis.reserve('k', FIVE_PER_SECOND, T)).toEqual({ ok: false, seq: 0, room: waiting, used: 0 });
  });

  it('waits for the Reset of a spent Remaining, and views the upstream’s word when it has less left', async () => {
    const { budget: redis } = budget();
    await redis.reserve('k', FIVE_PER_SECOND, T);
    expect(await redis.answer('k', 1, said(0, T + 1_000, 5), T + 1, FIVE_PER_SECOND, true)).toStrictEqual({
      pauseMs: 0,
      room: { free: 0, until: T + 1_000, wait: 'gate' },
      view: { limit: 5, remaining: 0, used: 5, resetAt: T + 1_000 },
    });
  });

  it('waits for a full window’s oldest send to leave it', async () => {
    const { budget: redis } = budget();
    await redis.reserve('k', FIVE_PER_SECOND, T);
    await redis.answer('k', 1, said(100, T + 60_000, 5), T, FIVE_PER_SECOND, true);
    for (let i = 1; i < 4; i++) await redis.reserve('k', FIVE_PER_SECOND, T + i);
    const full = { free: 0, until: T + 1_000, wait: 'window' };
    expect(await redis.reserve('k', FIVE_PER_SECOND, T + 4)).toEqual({ ok: true, seq: 5, room: full, used: 5 });
    expect(await redis.reserve('k', FIVE_PER_SECOND, T + 5)).toEqual({ ok: false, seq: 0, room: full, used: 0 });
  });

  it('pauses after a 429 for its Retry-After, or backs off from 1 s without one, and says so in its view', async () => {
    const { budget: redis } = budget();
    await redis.reserve('k', FIVE_PER_SECOND, T);
    expect(await redis.answer('k', 1, tooMany(3_000), T + 10, FIVE_PER_SECOND, true)).toStrictEqual({
      pauseMs: 3_000,
      room: { free: 0, until: T + 3_010, wait: 'paused' },
      view: { limit: 5, remaining: 0, used: 1, resetAt: T + 3_010, paused: true },
    });
    expect(await redis.reserve('k', FIVE_PER_SECOND, T + 20)).toEqual({
      ok: false,
      seq: 0,
      room: { free: 0, until: T + 3_010, wait: 'paused' },
      used: 0,
    });
    await redis.reserve('other', FIVE_PER_SECOND, T);
    expect(await redis.answer('other', 1, tooMany(undefined), T, FIVE_PER_SECOND, true)).toMatchObject({
      pauseMs: 1_000,
    });
  });

  it('views the first window as its log has it: no reset while nothing in it was sent, no pause unless paused', async () => {
    const { budget: redis } = budget();
    expect((await redis.answer('k', 1, bare, T, FIVE_PER_SECOND, true)).view).toStrictEqual({
      limit: 5,
      remaining: 5,
      used: 0,
      resetAt: undefined,
    });
    await redis.reserve('k', FIVE_PER_SECOND, T + 10);
    expect((await redis.answer('k', 1, bare, T + 20, FIVE_PER_SECOND, false)).view).toStrictEqual({
      limit: 5,
      remaining: 4,
      used: 1,
      resetAt: T + 1_010,
    });
  });

  it('returns no room when none is asked for, and marks no one waiting for an answer then', async () => {
    const { budget: redis, channel } = budget();
    const heard: string[] = [];
    subscriber.client.on('message', (from: string, keyId: string) => {
      if (from === channel) heard.push(keyId);
    });
    await subscriber.client.subscribe(channel);
    const probe = await redis.reserve('k', HUNDRED_PER_SECOND, T);
    // The probe's answer tells those waiting on it.
    await redis.answer('k', probe.seq, said(50, T + 60_000), T, HUNDRED_PER_SECOND, true);
    const a = await redis.reserve('k', HUNDRED_PER_SECOND, T + 1);
    const b = await redis.reserve('k', HUNDRED_PER_SECOND, T + 1);
    // Three left with one still out: had the room been asked for, b's replica would wait on b's answer.
    expect(await redis.answer('k', a.seq, said(3, T + 60_000), T + 2, HUNDRED_PER_SECOND, false)).toMatchObject({
      room: undefined,
    });
    expect(await redis.release('k', b.seq, T + 3, HUNDRED_PER_SECOND, false)).toEqual({
      free: 0,
      until: 0,
      wait: undefined,
    });
    // Published after anything b's release could have published: once heard, nothing else is coming.
    const control = await redis.reserve('control', HUNDRED_PER_SECOND, T);
    await redis.answer('control', control.seq, said(50, T + 60_000), T, HUNDRED_PER_SECOND, true);
    await until('the control heard', () => heard.includes('control'), { timeoutMs: 3_000, everyMs: 5 });
    expect(heard).toEqual(['k', 'control']);
  });

  it("keeps each key's state and send log under its prefix and hash tag, and forgets both", async () => {
    const { budget: redis, prefix } = budget();
    await redis.reserve('k', FIVE_PER_SECOND, T);
    const client = connection.client;
    expect(await client.type(`${prefix}:{k}:budget`)).toBe('hash');
    expect(await client.type(`${prefix}:{k}:sends`)).toBe('zset');
    await redis.forget('k');
    expect(await client.exists(`${prefix}:{k}:budget`, `${prefix}:{k}:sends`)).toBe(0);
  });

  it('counts the replicas of its prefix whose lease holds, and those away', async () => {
    const { budget: redis, prefix } = budget();
    const { budget: elsewhere } = budget();
    expect(await redis.beat('first', T, 300, 10_000)).toEqual({ alive: 1, away: 0 });
    expect(await redis.beat('second', T + 500, 300, 10_000)).toEqual({ alive: 1, away: 1 });
    // Another gateway on the same Redis counts its own replicas only.
    expect(await elsewhere.beat('third', T + 500, 300, 10_000)).toEqual({ alive: 1, away: 0 });
    // The key the shared budget asks to learn that Redis is back: it lasts as long as a replica may be away.
    expect(await connection.client.pttl(`${prefix}:replicas`)).toBeGreaterThan(9_000);
  });

  it('counts as holding a lease, for a replica back from losing Redis, only those that beat after it came back', async () => {
    const { budget: redis } = budget();
    await redis.beat('stayed', T, 1_500, 10_000);
    await redis.beat('lost-too', T + 100, 1_500, 10_000);
    // Back at T + 200: both leases hold, yet either may have lost Redis too and be about to plan
    // alone; they count as away until they beat again.
    expect(await redis.beat('back', T + 200, 1_500, 10_000, T + 200)).toEqual({ alive: 1, away: 2 });
    await redis.beat('stayed', T + 500, 1_500, 10_000);
    expect(await redis.beat('back', T + 700, 1_500, 10_000, T + 200)).toEqual({ alive: 2, away: 1 });
    // The lease still bounds it: past it, a beat before `since` or not, one lapsed is away.
    expect(await redis.beat('back', T + 2_100, 1_500, 10_000, T + 200)).toEqual({ alive: 1, away: 2 });
  });

  it('runs the beat alone, and fills the model’s constants into the budget scripts', () => {
    const beat = readFileSync(new URL('../../../../src/gateway/upstream/limits/lua/beat.lua', import.meta.url), 'utf8');
    expect(script('beat')).toBe(beat);
    expect(script('reserve')).not.toMatch(/\{\{/);
  });
});

describe('the library', () => {
  /** How many calls of `command` the server has run (INFO commandstats). */
  const calls = async (server: RedisServer, command: string) =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await server.cli('INFO', 'commandstats'))?.[1] ?? 0);
  /** Scripts run, by EVAL or EVALSHA (ioredis sends the script itself where the server may lack it). */
  const scripts = async (server: RedisServer) => (await calls(server, 'eval')) + (await calls(server, 'evalsha'));
  const planned = { ok: true, seq: 1, used: 1 };
  const ready = (connection: RedisConnection) =>
    until('connected', () => connection.client.status === 'ready', { timeoutMs: 10_000, everyMs: 10 });

  /** A reservation and its answer on `target`, on a connection of its own: the rules' replies, whichever way it runs them. */
  async function reserveAndAnswer(target: RedisTarget): Promise<void> {
    const own = createRedisConnection(target);
    try {
      await ready(own);
      const redis = new RedisBudget({
        client: own.client,
        prefix: `own-${run++}`,
        tag: 'one',
        inflightMs: 60_000,
        channel: 'c',
      });
      expect(await redis.reserve('k', FIVE_PER_SECOND, T)).toMatchObject(planned);
      const { view } = await redis.answer('k', 1, said(3, T + 1_000), T, FIVE_PER_SECOND, true);
      expect(view).toMatchObject({ remaining: 3, resetAt: T + 1_000 });
    } finally {
      own.close();
    }
  }

  /** A user of the test server who may do anything but `denied`. */
  async function userWithout(name: string, ...denied: string[]): Promise<RedisTarget> {
    const rules = ['on', '>not-a-secret', '~*', '&*', '+@all', ...denied.map((command) => `-${command}`)];
    await server.cli('ACL', 'SETUSER', name, ...rules);
    return { mode: 'single', url: server.url, auth: { username: name, password: 'not-a-secret' }, tls: false };
  }

  it('runs as one Redis function library, loaded again where a server has lost it', async () => {
    await server.cli('FUNCTION', 'FLUSH');
    const { budget: redis } = budget();
    const [fcalls, scriptsBefore] = [await calls(server, 'fcall'), await scripts(server)];
    expect(await redis.reserve('k', FIVE_PER_SECOND, T)).toMatchObject(planned);
    expect(await server.cli('FUNCTION', 'LIST')).toContain(LIBRARY.name);
    // A restarted or flushed server has no library: the call that finds it missing loads it.
    await server.cli('FUNCTION', 'FLUSH');
    expect((await redis.answer('k', 1, said(3, T + 1_000), T, FIVE_PER_SECOND, true)).view).toMatchObject({
      remaining: 3,
    });
    expect(await server.cli('FUNCTION', 'LIST')).toContain(LIBRARY.name);
    // Each call one FCALL, and a second where it found the library missing; no script.
    expect(await calls(server, 'fcall')).toBe(fcalls + 4);
    expect(await scripts(server)).toBe(scriptsBefore);
  });

  it('runs the same Lua by EVALSHA on a Redis without functions (before 7.0: here FCALL and FUNCTION renamed away)', async () => {
    const old = await startRedis(['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', '']);
    try {
      await reserveAndAnswer({ mode: 'single', url: old.url, auth: {}, tls: false });
      expect(await scripts(old)).toBeGreaterThanOrEqual(2);
    } finally {
      await old.stop();
    }
  });

  it('is one library of the four scripts, named after its text, the model’s constants filled in', () => {
    expect(LIBRARY.name).toMatch(/^petstore_budget_[0-9a-f]{12}$/);
    expect(LIBRARY.code.startsWith(`#!lua name=${LIBRARY.name}\n`)).toBe(true);
    expect(LIBRARY.code).not.toMatch(/\{\{/);
    expect(LIBRARY.code).toContain('local function measure(b)');
    for (const name of ['reserve', 'answer', 'release', 'reconcile']) {
      expect(LIBRARY.code).toContain(`\nredis.register_function('${LIBRARY.name}_${name}', ${name})\n`);
    }
  });

  it('runs the Lua by EVALSHA where the ACL allows functions to be called but not loaded, and the library is missing', async () => {
    await server.cli('FUNCTION', 'FLUSH');
    const target = await userWithout('no-load', 'function');
    const [fcalls, scriptsBefore] = [await calls(server, 'fcall'), await scripts(server)];
    await reserveAndAnswer(target);
    // One FCALL found the library missing, its load was refused: scripts from then on.
    expect(await calls(server, 'fcall')).toBe(fcalls + 1);
    expect(await scripts(server)).toBeGreaterThanOrEqual(scriptsBefore + 2);
    expect(await server.cli('FUNCTION', 'LIST')).not.toContain(LIBRARY.name);
  });

  it('runs the Lua by EVALSHA where the ACL allows scripts but not functions', async () => {
    const target = await userWithout('scripts-only', 'fcall', 'function');
    const [fcalls, scriptsBefore] = [await calls(server, 'fcall'), await scripts(server)];
    await reserveAndAnswer(target);
    expect(await scripts(server)).toBeGreaterThanOrEqual(scriptsBefore + 2);
    expect(await calls(server, 'fcall')).toBe(fcalls);
  });
});
