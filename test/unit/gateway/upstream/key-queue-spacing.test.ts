/**
 * The key queue's spacing (src/gateway/upstream/limits/key-queue.ts): while two clients or more of a
 * key contend for it and its window was spent lately, its waiting requests go one at a time,
 * window/count apart, in turn by client; otherwise they go together as the store's word allows.
 * Each send's millisecond is pinned. Real bottleneck limiters on vitest's fake timers, a plain
 * function as the store (test/helpers/key-queue.ts).
 */

import { describe, expect, it, vi } from 'vitest';
import type { Asked } from '../../../../src/gateway/upstream/limits/key-queue.js';
import { fakeClock, queues, quick, request, roomFor, store, T, windowStore } from '../../../helpers/key-queue.js';

fakeClock();

describe('the sends of a spent key, spaced among contending clients (window 4 per second: 250 ms apart)', () => {
  const window = { count: 4, windowMs: 1_000 };

  it.each(['window', 'gate'] as const)(
    "spaces them window/count apart, in turn by client, once the store's %s wait ends",
    async (wait) => {
      const { q } = queues({ perKey: 4, window });
      const s = windowStore(4, 1_000, wait);
      const all: Promise<void>[] = [];
      for (let i = 0; i < 6; i++) all.push(quick(q, s.ask('a'), 'a'), quick(q, s.ask('b'), 'b'));
      await vi.advanceTimersByTimeAsync(3_000);
      await Promise.all(all);
      // The first spaced send takes the grid's slot before now, so the next may go at once.
      expect(s.asks).toEqual([
        '0 a',
        '0 b',
        '0 a',
        '0 b',
        '1001 a',
        '1002 b',
        '1252 a',
        '1502 b',
        '2002 a',
        '2003 b',
        '2253 a',
        '2503 b',
      ]);
    },
  );

  it('does not put a spaced turn off by the turns of a burst that went while the key was not spaced', async () => {
    const { q } = queues({ window, perKey: 20 });
    const s = store(0, T + 1_000);
    for (let i = 0; i < 12; i++) request(q, s.ask('a'), 'a');
    // At 1 s all twelve go, one client alone on the key: not spaced.
    s.state.room = 12;
    s.state.until = T + 2_000;
    await vi.advanceTimersByTimeAsync(1_100);
    expect(s.state.asks.filter((ask) => !ask.endsWith('no'))).toHaveLength(12);
    // Two clients wait on the spent key: what frees at 1.5 s goes on the grid from the burst's last turn
    // (its first slot taken late, the next at once), not twelve turns on, at 4 s.
    request(q, s.ask('b'), 'b');
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(400);
    s.state.room = 2;
    q.changed('k', roomFor(2));
    await vi.advanceTimersByTimeAsync(500);
    expect(s.state.asks.filter((ask) => Number.parseInt(ask, 10) >= 1_100)).toEqual([
      '1100 b no',
      '1100 a no',
      '1500 b',
      '1503 a',
    ]);
  });

  it('lets them go together when one client uses the key', async () => {
    const { q } = queues({ perKey: 4, window });
    const s = windowStore(4, 1_000);
    const all: Promise<void>[] = [];
    for (let i = 0; i < 8; i++) all.push(quick(q, s.ask('a'), 'a'));
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all(all);
    expect(s.asks).toEqual(['0 a', '0 a', '0 a', '0 a', '1001 a', '1002 a', '1002 a', '1002 a']);
  });

  it('lets them go together after a pause: spacing is for a spent window', async () => {
    const { q } = queues({ perKey: 4, window });
    const pausedUntil = T + 500;
    const s = windowStore(4, 1_000);
    const ask = (client: string) => async (): Promise<Asked<number>> =>
      Date.now() < pausedUntil ? { ok: false, room: { free: 0, until: pausedUntil, wait: 'paused' } } : s.ask(client)();
    const all: Promise<void>[] = [];
    for (let i = 0; i < 2; i++) all.push(quick(q, ask('a'), 'a'), quick(q, ask('b'), 'b'));
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(all);
    expect(s.asks).toEqual(['501 a', '502 b', '502 a', '502 b']);
  });

  it.each([
    [1_500, ['1500 a', '1501 b', '1751 a']],
    [2_000, ['2000 a', '2000 b', '2000 a']],
  ])('spaces them until a window after the spent one frees (word at %i ms)', async (at, sends) => {
    const { q } = queues({ window });
    const s = store(0, T + 1_000);
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    // From its next word on, the store waits for an answer: the key is no longer spent.
    s.state.until = T + 60_000;
    s.state.wait = 'answer';
    await vi.advanceTimersByTimeAsync(at - 110);
    request(q, s.ask('b'), 'b');
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(100);
    s.state.room = 3;
    q.changed('k', roomFor(3));
    await vi.advanceTimersByTimeAsync(500);
    expect(s.state.asks.slice(2)).toEqual(sends);
  });

  it.each([
    [1_500, ['2000 b', '2001 b', '2251 b']],
    [1_000, ['2000 b', '2000 b', '2000 b']],
  ])(
    'counts as contending a client that asked within the window, though nothing of it waits (asked at %i ms)',
    async (at, sends) => {
      const { q } = queues({ window });
      const s = store();
      for (let i = 0; i < 3; i++) request(q, s.ask('b'), 'b');
      await vi.advanceTimersByTimeAsync(at);
      // Refused at once: its deadline comes before the store's wait ends.
      request(q, s.ask('a'), 'a', { waitMs: 1_000 });
      await vi.advanceTimersByTimeAsync(2_000 - at);
      s.state.room = 3;
      q.changed('k', roomFor(3));
      await vi.advanceTimersByTimeAsync(500);
      expect(s.state.asks.slice(3)).toEqual(sends);
    },
  );

  it('does not count a client whose waiting requests went more than a window ago', async () => {
    const { q } = queues({ window });
    const s = store(0, T + 500);
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 1;
    // a's request waits, goes at 501 and stays in flight; b's three come after, and wait.
    await vi.advanceTimersByTimeAsync(600);
    s.state.until = T + 30_000;
    for (let i = 0; i < 3; i++) request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(1_390);
    s.state.room = 3;
    q.changed('k', roomFor(3));
    await vi.advanceTimersByTimeAsync(500);
    expect(s.state.asks).toEqual(['0 a no', '501 a', '610 b no', '610 b no', '610 b no', '2000 b', '2000 b', '2000 b']);
  });

  // A client waiting since before the others is the key's least recently seen: the first forgotten.
  it.each([
    [998, ['2000 first', '2001 last', '2251 first']],
    [999, ['2000 first', '2000 last', '2000 first']],
  ])('remembers a thousand clients of a key as contending, not more (%i others seen)', async (others, sends) => {
    const { q } = queues({ window });
    const s = store();
    request(q, s.ask('first'), 'first');
    await vi.advanceTimersByTimeAsync(10);
    request(q, s.ask('first'), 'first');
    // Refused at once (their deadline is before the store's wait ends), but seen.
    for (let i = 0; i < others; i++) request(q, s.ask(`c${i}`), `c${i}`, { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_990);
    request(q, s.ask('last'), 'last');
    s.state.room = 3;
    q.changed('k', roomFor(3));
    await vi.advanceTimersByTimeAsync(500);
    expect(s.state.asks).toEqual(['0 first no', ...sends]);
  });

  it('without a window in the plan, lets them go together', async () => {
    const { q } = queues({ perKey: 4 });
    const s = windowStore(4, 1_000);
    const all: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) all.push(quick(q, s.ask('a'), 'a'), quick(q, s.ask('b'), 'b'));
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all(all);
    expect(s.asks).toEqual(['0 a', '0 b', '0 a', '0 b', '1001 a', '1002 b', '1002 a', '1002 b']);
  });
});
