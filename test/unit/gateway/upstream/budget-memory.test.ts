/**
 * The in-process budget store (src/gateway/upstream/limits/budget.ts) on its own: what it returns,
 * which keys it forgets and when, and what it takes from and hands back to the shared store when it
 * is a replica's local share (seed, happened). The rules every store shares are in budget.test.ts.
 * Times are plain numbers passed in, so minutes of idleness cost nothing.
 */

import { describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../../src/config.js';
import { MemoryBudgetStore } from '../../../../src/gateway/upstream/limits/budget.js';
import { PROBE_MS } from '../../../../src/gateway/upstream/limits/model.js';
import { said, seqOf, tooMany } from '../../../helpers/budget-answers.js';

const T = 1_800_000_000_000;
const FIVE_PER_SECOND: RateWindow[] = [{ count: 5, windowMs: 1_000 }];
const HUNDRED_PER_SECOND: RateWindow[] = [{ count: 100, windowMs: 1_000 }];

/** The keys the store holds, oldest first: every key in these tests has a send in its log. */
const held = (store: MemoryBudgetStore) => [...store.happened(0, T)].map(([keyId]) => keyId);

describe('the in-memory budget, call by call', () => {
  it('returns a planned request whole: its sequence number, the room after it, and epoch 0', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    expect(await store.reserve('k', T)).toEqual({
      ok: true,
      seq: 1,
      room: { free: 0, until: T + PROBE_MS, wait: 'answer' },
      epoch: 0,
    });
  });

  it('returns what an answer left whole: no pause, the room now and the budget as known', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: HUNDRED_PER_SECOND, share: 1 } });
    const probe = seqOf(await store.reserve('k', T));
    expect(await store.answer('k', probe, said(40, T + 1_000), T + 5)).toEqual({
      pauseMs: 0,
      room: { free: 4, until: T + 5, wait: undefined },
      view: { limit: 100, remaining: 40, used: 60, resetAt: T + 1_000 },
    });
  });

  it('counts the requests of every key in flight until each is answered or released', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    const a = seqOf(await store.reserve('a', T));
    const b = seqOf(await store.reserve('b', T));
    seqOf(await store.reserve('c', T));
    expect(store.inflight).toBe(3);
    await store.answer('a', a, said(4, T + 1_000, 5), T + 1);
    await store.release('b', b, T + 1);
    expect(store.inflight).toBe(1);
  });

  it('gives the room after a release: a probe that got no answer lets the next request probe', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    const probe = seqOf(await store.reserve('k', T));
    expect(await store.release('k', probe, T + 1)).toEqual({ free: 1, until: T + 1, wait: undefined });
  });

  it('answers a release for a key it does not hold with room for one, and does not start holding it', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    expect(await store.release('forgotten', 1, T)).toEqual({ free: 1, until: T, wait: undefined });
    expect(store.size).toBe(0);
  });

  it('forgets the key it is told to and keeps the others; holds none once closed', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    seqOf(await store.reserve('refused', T));
    seqOf(await store.reserve('other', T));
    await store.forget('refused');
    expect(held(store)).toEqual(['other']);
    await store.close();
    expect(store.size).toBe(0);
  });
});

describe('the in-memory budget with many keys', () => {
  const plan = { windows: FIVE_PER_SECOND, share: 1 };
  const use = async (store: MemoryBudgetStore, key: string, now: number, remaining: number) => {
    const seq = seqOf(await store.reserve(key, now));
    await store.answer(key, seq, said(remaining, now + 60_000, 5), now);
  };

  it('forgets idle keys, but never one that is paused or whose window is spent', async () => {
    const store = new MemoryBudgetStore({ plan, idleMs: 10_000 });
    await use(store, 'idle', T, 4);
    await use(store, 'spent', T, 0);
    await store.answer('paused', seqOf(await store.reserve('paused', T)), tooMany(120_000), T);
    // A new key after the idle time sweeps.
    await use(store, 'new', T + 20_000, 4);
    expect(store.size).toBe(3);
    expect(await store.reserve('spent', T + 20_000)).toMatchObject({ ok: false, room: { wait: 'gate' } });
    expect(await store.reserve('paused', T + 20_000)).toMatchObject({ ok: false, room: { until: T + 120_000 } });
  });

  it('forgets a key idle exactly idleMs, and keeps one idle a millisecond less', async () => {
    const store = new MemoryBudgetStore({ plan, idleMs: 10_000 });
    await use(store, 'a', T, 4);
    await use(store, 'b', T + 1, 4);
    await use(store, 'c', T + 10_000, 4);
    expect(held(store)).toEqual(['b', 'c']);
  });

  it('looks for idle keys at most once a second, so a new key soon after a look finds them still held', async () => {
    const store = new MemoryBudgetStore({ plan, idleMs: 10_000 });
    await use(store, 'a', T, 4);
    await use(store, 'b', T + 9_500, 4);
    // Half a second after the last look, at b: a, idle 10 s by now, waits for the next one.
    await use(store, 'c', T + 10_000, 4);
    expect(held(store)).toEqual(['a', 'b', 'c']);
    await use(store, 'd', T + 10_500, 4);
    expect(held(store)).toEqual(['b', 'c', 'd']);
  });

  it('looks for idle keys as often as idleMs when that is under a second', async () => {
    const store = new MemoryBudgetStore({ plan, idleMs: 100 });
    await use(store, 'a', T, 4);
    await use(store, 'b', T + 100, 4);
    expect(held(store)).toEqual(['b']);
  });

  it('forgets a key idle five minutes by default', async () => {
    const store = new MemoryBudgetStore({ plan });
    await use(store, 'a', T, 4);
    await use(store, 'b', T + 299_000, 4);
    expect(held(store)).toEqual(['a', 'b']);
    await use(store, 'c', T + 300_000, 4);
    expect(held(store)).toEqual(['b', 'c']);
  });

  it('holds at most maxKeys that may be forgotten, dropping the least recently used', async () => {
    const store = new MemoryBudgetStore({ plan, maxKeys: 100, idleMs: 3_600_000 });
    for (let i = 0; i < 1_000; i++) await use(store, `key-${i}`, T + i, 4);
    expect(store.size).toBeLessThanOrEqual(100);
  });

  it('holds 10,000 keys by default, and frees a tenth of them for the next', async () => {
    // Throttling off: a key holds nothing back, so any may go.
    const store = new MemoryBudgetStore({ plan: { windows: [], share: 1 } });
    for (let i = 0; i < 10_000; i++) await store.reserve(`key-${i}`, T);
    expect(store.size).toBe(10_000);
    await store.reserve('key-10000', T);
    expect(store.size).toBe(9_001);
  });

  it('frees a tenth of the bound at once, the least recently used first, so new keys do not each sort all', async () => {
    const store = new MemoryBudgetStore({ plan, maxKeys: 100, idleMs: 3_600_000 });
    // Within one second, so only the bound sweeps (not the once-a-second idle sweep).
    for (let i = 0; i < 100; i++) await use(store, `key-${i}`, T, 4);
    await use(store, 'key-0', T + 1, 4);
    expect(store.size).toBe(100);
    await use(store, 'key-100', T + 2, 4);
    // Down to 90, then the new one: the ten used least recently went, key-0 (used again) stayed.
    expect(store.size).toBe(91);
    for (let i = 101; i < 110; i++) await use(store, `key-${i}`, T + 3, 4);
    expect(store.size).toBe(100);
    // Known keys go on numbering their requests; a forgotten one starts again at 1.
    expect(await store.reserve('key-0', T + 4)).toMatchObject({ ok: true, seq: 3 });
    expect(await store.reserve('key-11', T + 4)).toMatchObject({ ok: true, seq: 2 });
    expect(await store.reserve('key-10', T + 4)).toMatchObject({ ok: true, seq: 1 });
  });

  it('drops no key below the bound to make room: the idle look a second later forgets only idle ones', async () => {
    const store = new MemoryBudgetStore({ plan, maxKeys: 100, idleMs: 3_600_000 });
    for (let i = 0; i < 95; i++) await use(store, `key-${i}`, T, 4);
    await use(store, 'key-95', T + 1_000, 4);
    expect(store.size).toBe(96);
  });

  it('passes over a key with a request in flight when making room, however long unused', async () => {
    const store = new MemoryBudgetStore({ plan, maxKeys: 10, idleMs: 3_600_000 });
    // Forgotten, its key could send again before the answer that may say its window is spent.
    seqOf(await store.reserve('in-flight', T));
    for (let i = 1; i < 10; i++) await use(store, `key-${i}`, T + i, 4);
    await use(store, 'new', T + 10, 4);
    expect(held(store)).toEqual([
      'in-flight',
      'key-2',
      'key-3',
      'key-4',
      'key-5',
      'key-6',
      'key-7',
      'key-8',
      'key-9',
      'new',
    ]);
    expect(store.inflight).toBe(1);
  });

  it('after a sweep that could free nothing, sorts again only once a tenth of the bound more keys came', async () => {
    const store = new MemoryBudgetStore({ plan, maxKeys: 20, idleMs: 3_600_000 });
    // Every key with its probe in flight: none may be forgotten, so the 21st finds no room.
    const first = seqOf(await store.reserve('key-0', T));
    for (let i = 1; i <= 20; i++) seqOf(await store.reserve(`key-${i}`, T));
    expect(store.size).toBe(21);
    await store.release('key-0', first, T);
    // key-0 may be forgotten now, but the next sort waits for 22 keys (20 and a tenth of it).
    seqOf(await store.reserve('key-21', T));
    expect(store.size).toBe(22);
    expect(held(store)).toContain('key-0');
    seqOf(await store.reserve('key-22', T));
    expect(store.size).toBe(22);
    expect(held(store)).not.toContain('key-0');
  });
});

describe('the in-memory budget as a local share of the shared one', () => {
  it('starts a key with the sends given, at the time given: they fill its window until they leave it', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    store.seed('k', 5, T, 0);
    expect([...store.happened(T, T)]).toEqual([['k', 0, [T, T, T, T, T]]]);
    expect(await store.reserve('k', T + 1)).toEqual({ ok: false, room: { free: 0, until: T + 1_000, wait: 'window' } });
    expect(await store.reserve('k', T + 1_000)).toMatchObject({ ok: true, seq: 1 });
  });

  it("places seeded sends no earlier than the key's last send, so its log stays in order", async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    seqOf(await store.reserve('k', T + 5));
    store.seed('k', 2, T, 0);
    expect([...store.happened(T, T + 5)]).toEqual([['k', 0, [T + 5, T + 5, T + 5]]]);
  });

  it('seeded with a time before which nothing may go, plans nothing until then, and then one probe', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: FIVE_PER_SECOND, share: 1 } });
    store.seed('k', 0, T, T + 2_000);
    expect(await store.reserve('k', T + 1)).toEqual({ ok: false, room: { free: 0, until: T + 2_000, wait: 'gate' } });
    expect(await store.reserve('k', T + 2_000)).toEqual({
      ok: true,
      seq: 1,
      room: { free: 0, until: T + 2_000 + PROBE_MS, wait: 'answer' },
      epoch: 0,
    });
    expect(await store.reserve('k', T + 2_000)).toMatchObject({ ok: false, room: { wait: 'answer' } });
  });

  it('hands back each key that sent since a time or is still paused: its sends since then and its pause', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: HUNDRED_PER_SECOND, share: 1 } });
    await store.answer('sent', seqOf(await store.reserve('sent', T)), said(50, T + 60_000), T);
    seqOf(await store.reserve('sent', T + 10));
    await store.answer('paused', seqOf(await store.reserve('paused', T)), tooMany(3_000), T + 10);
    seqOf(await store.reserve('quiet', T));
    expect([...store.happened(T + 10, T + 20)]).toEqual([
      ['sent', 0, [T + 10]],
      ['paused', T + 3_010, []],
    ]);
    // A pause that has ended is nothing the shared store must learn.
    expect([...store.happened(T + 10, T + 3_010)]).toEqual([['sent', 0, [T + 10]]]);
  });
});
