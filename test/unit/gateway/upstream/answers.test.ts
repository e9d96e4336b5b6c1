/**
 * The in-process answer store on its own: bounded in bytes as V8 holds them, and fenced by each key's
 * write generation; and the sharing stage's rule that a read joins only a GET in flight under its own
 * generation. The store shared through Redis is tested against a real redis-server in
 * answers-redis.test.ts.
 */

import { describe, expect, it } from 'vitest';
import { stringBytes } from '../../../../src/gateway/shared/bytes.js';
import type { Generation, UpstreamResponse } from '../../../../src/gateway/upstream/response.js';
import { type AnswerStore, memoryAnswers } from '../../../../src/gateway/upstream/sharing/answers.js';
import { createResponseSharing } from '../../../../src/gateway/upstream/sharing/sharing.js';
import { upstreamCall } from '../../../helpers/upstream-call.js';

const MB = 1024 * 1024;
const answer = (body: string, link?: string) => ({
  response: { status: 200, headers: link === undefined ? {} : { link }, body } as UpstreamResponse,
  at: Date.now(),
});

describe('stringBytes', () => {
  it('counts Latin-1 text at a byte a character and anything wider at two, after a 16-byte header', () => {
    expect(stringBytes(Buffer.from('x'.repeat(1_000)).toString())).toBe(16 + 1_000);
    expect(stringBytes(Buffer.from('é'.repeat(1_000)).toString())).toBe(16 + 1_000);
    expect(stringBytes(Buffer.from(`${'x'.repeat(999)}ж`).toString())).toBe(16 + 2_000);
    expect(stringBytes(Buffer.from('😀').toString())).toBe(16 + 4);
  });
});

describe('memoryAnswers', () => {
  it('holds no more bytes than its budget, dropping the oldest answers first', async () => {
    const store = memoryAnswers({ maxBytes: 4 * MB });
    const page = 'x'.repeat(MB / 4);
    for (let i = 0; i < 40; i++) await store.set('k', `u${i}`, answer(page), 60_000, 0);
    expect(store.bytes).toBeLessThanOrEqual(4 * MB);
    expect(store.bytes).toBeGreaterThan(3 * MB);
    expect((await store.read('k', 'u0')).stored).toBeUndefined();
    expect((await store.read('k', 'u39')).stored?.response.body).toBe(page);
  });

  it('never keeps an answer larger than an eighth of its budget, and drops the one it replaces', async () => {
    const store = memoryAnswers({ maxBytes: 8 * MB });
    await store.set('k', 'u', answer('small'), 60_000, 0);
    await store.set('k', 'u', answer('x'.repeat(MB + 1)), 60_000, 0);
    expect((await store.read('k', 'u')).stored).toBeUndefined();
    expect(store.bytes).toBe(0);
    // Two bytes a character beyond Latin-1: 600,000 characters are over 1 MiB.
    await store.set('k', 'wide', answer(`ж${'x'.repeat(600_000)}`), 60_000, 0);
    expect((await store.read('k', 'wide')).stored).toBeUndefined();
    await store.set('k', 'narrow', answer('x'.repeat(600_000)), 60_000, 0);
    expect((await store.read('k', 'narrow')).stored).toBeDefined();
  });

  it('keeps of an answer what readers need: status, body and Link, under its generation', async () => {
    const store = memoryAnswers();
    const response: UpstreamResponse = {
      status: 200,
      headers: { link: '</v1/pets?after=2>; rel="next"', 'x-ratelimit-remaining': '5', 'set-cookie': ['a', 'b'] },
      body: '[]',
    };
    await store.set('k', 'u', { response, at: 1 }, 60_000, 0);
    expect((await store.read('k', 'u')).stored).toMatchObject({
      response: { status: 200, headers: { link: '</v1/pets?after=2>; rel="next"' }, body: '[]', generation: 0 },
      at: 1,
    });
    expect(Object.keys((await store.read('k', 'u')).stored?.response.headers ?? {})).toEqual(['link']);
  });

  it('fences every answer of a key at its write, never another key’s, and refuses one asked before it', async () => {
    const store = memoryAnswers();
    const before = await store.generation('k');
    await store.set('k', 'u', answer('old'), 60_000, before);
    await store.set('other', 'u', answer('theirs'), 60_000, await store.generation('other'));
    await store.invalidate('k');
    const { stored, generation } = await store.read('k', 'u');
    expect(stored).toBeUndefined();
    expect(generation).not.toBe(before);
    expect((await store.read('other', 'u')).stored?.response.body).toBe('theirs');
    // Asked for before the write, answered after it: the world before the write.
    await store.set('k', 'u', answer('late'), 60_000, before);
    expect((await store.read('k', 'u')).stored).toBeUndefined();
    await store.set('k', 'u', answer('new'), 60_000, generation);
    expect((await store.read('k', 'u')).stored?.response.body).toBe('new');
  });

  it('never hands out a generation twice, across writes of many keys and a clear', async () => {
    const store = memoryAnswers();
    const seen = new Set<Generation>([await store.generation('k')]);
    for (let i = 0; i < 12_000; i++) await store.invalidate(`key-${i}`);
    // Past the keys it holds generations for, every key moved on, this one too.
    expect(seen.has(await store.generation('k'))).toBe(false);
    seen.add(await store.generation('k'));
    store.clear();
    expect(seen.has(await store.generation('k'))).toBe(false);
  });

  it('forgets an answer past its time', async () => {
    let now = 0;
    const store = memoryAnswers({ now: () => now });
    await store.set('k', 'u', answer('a'), 1_000, 0);
    now = 999;
    expect((await store.read('k', 'u')).stored).toBeDefined();
    now = 1_000;
    expect((await store.read('k', 'u')).stored).toBeUndefined();
    expect(store.bytes).toBe(0);
  });
});

describe('sharing across a write another replica made', () => {
  it('does not join a GET in flight under another generation', async () => {
    // A store whose generation moves as another replica's write would move it.
    const answers = memoryAnswers();
    let generation: Generation = 'before';
    const shared: AnswerStore = {
      ...answers,
      read: async (keyId, url) => ({ ...(await answers.read(keyId, url)), generation }),
      set: async () => {},
    };
    let sends = 0;
    const send = createResponseSharing({ ttlMs: 60_000, answers: shared }).stage(async () => {
      sends++;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { status: 200, headers: {}, body: `[${sends}]` };
    });
    const first = send(call());
    await new Promise((resolve) => setTimeout(resolve, 5));
    generation = 'after';
    const second = send(call());
    const joined = send(call());
    expect((await first).generation).toBe('before');
    expect(await second).toMatchObject({ body: '[2]', generation: 'after' });
    expect((await joined).body).toBe('[2]');
    expect(sends).toBe(2);
  });
});

const call = () => upstreamCall();
