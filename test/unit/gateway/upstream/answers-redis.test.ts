/**
 * The answer store shared through Redis, against a real redis-server: generations that a flushed
 * Redis cannot hand out again, a write made while one replica was cut off from Redis replayed when it
 * returns (or, past what it holds, every generation dropped), and the in-process byte rule applied
 * to what is pushed to Redis. A partition is a TCP proxy on loopback that drops the connections of
 * one store and refuses new ones; the other store reaches Redis directly.
 */

import { describe, expect, it } from 'vitest';
import { createRedisConnection } from '../../../../src/gateway/upstream/redis/connection.js';
import type { Generation } from '../../../../src/gateway/upstream/response.js';
import { type AnswerStore, memoryAnswers } from '../../../../src/gateway/upstream/sharing/answers.js';
import { type RedisAnswersOptions, redisAnswers } from '../../../../src/gateway/upstream/sharing/answers-redis.js';
import { redisBehindProxy } from '../../../helpers/redis-behind-proxy.js';

const shared = redisBehindProxy();
const { closers } = shared;
let run = 0;

/** Two stores of one prefix: `cutOff` through the proxy, `direct` straight to Redis. */
async function replicas(
  options: Partial<RedisAnswersOptions> = {},
): Promise<{ cutOff: AnswerStore; direct: AnswerStore }> {
  const prefix = `answers-unit-${run++}`;
  const make = (url: string) => {
    const connection = createRedisConnection({ mode: 'single', url, auth: {}, tls: false }, { commandTimeoutMs: 500 });
    const store = redisAnswers({ connection, prefix, fallback: memoryAnswers(), ...options });
    closers.push(async () => {
      await store.close();
      connection.close();
    });
    return store;
  };
  const cutOff = make(`redis://127.0.0.1:${shared.proxy.port}`);
  const direct = make(shared.redis.url);
  // Connected: the first command answered.
  await until(async () => typeof (await cutOff.generation('warm-up')) === 'string');
  await until(async () => typeof (await direct.generation('warm-up')) === 'string');
  return { cutOff, direct };
}

const answer = (body: string) => ({ response: { status: 200, headers: {}, body }, at: Date.now() });

describe('answers shared through Redis', () => {
  it('give every key a generation no flush can hand out again', async () => {
    const { direct } = await replicas();
    const first = await direct.generation('k');
    expect(await direct.generation('k')).toBe(first);
    await direct.set('k', 'u', answer('[1]'), 60_000, first);
    expect((await direct.read('k', 'u')).stored?.response.body).toBe('[1]');
    await shared.redis.cli('FLUSHALL');
    const after = await direct.generation('k');
    expect(after).not.toBe(first);
    expect(typeof after).toBe('string');
  });

  it('replay a write made while cut off from Redis as soon as Redis answers again, and say when each happens', async () => {
    const told: string[] = [];
    const { cutOff, direct } = await replicas({
      onDegraded: (error) => told.push(`degraded: ${(error as Error).message}`),
      onRestored: () => told.push('restored'),
    });
    const before = await direct.generation('k');
    await direct.set('k', 'u', answer('[before]'), 60_000, before);
    // A store also goes local, and back, when its first command comes before its connection is made.
    await until(async () => told.length === 0 || told.at(-1) === 'restored');
    const fromCut = told.length;
    await shared.proxy.cut();
    try {
      await cutOff.invalidate('k');
      // The replica that wrote serves the key from what it holds itself, which knows of the write.
      expect((await cutOff.read('k', 'u')).stored).toBeUndefined();
      expect(await direct.generation('k')).toBe(before);
    } finally {
      await shared.proxy.heal();
    }
    expect(await until(async () => (await direct.generation('k')) !== before)).toBe(true);
    expect((await direct.read('k', 'u')).stored).toBeUndefined();
    expect(await until(async () => told.slice(fromCut).includes('restored'))).toBe(true);
    expect(told.slice(fromCut), told.join(' | ')).toEqual([expect.stringMatching(/^degraded: ./), 'restored']);
  });

  it('drop every generation when Redis returns, when more keys wrote while cut off than are held', async () => {
    const { cutOff, direct } = await replicas({ maxPending: 1 });
    const before = new Map<string, Generation>();
    for (const key of ['a', 'b', 'c']) before.set(key, await direct.generation(key));
    await shared.proxy.cut();
    try {
      await cutOff.invalidate('a');
      await cutOff.invalidate('b');
    } finally {
      await shared.proxy.heal();
    }
    // 'b' was not held to be replayed, and 'c' never wrote: both are fenced all the same.
    expect(await until(async () => (await direct.generation('b')) !== before.get('b'))).toBe(true);
    for (const key of ['a', 'c']) expect(await direct.generation(key)).not.toBe(before.get(key));
  });

  it('never pushes an answer too large to keep in process', async () => {
    const { direct } = await replicas({ maxBytes: 1024 * 1024 });
    const generation = await direct.generation('k');
    await direct.set('k', 'small', answer('x'.repeat(100_000)), 60_000, generation);
    await direct.set('k', 'large', answer('x'.repeat(140_000)), 60_000, generation);
    expect((await direct.read('k', 'small')).stored).toBeDefined();
    expect((await direct.read('k', 'large')).stored).toBeUndefined();
  });
});

async function until(condition: () => Promise<boolean>, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
