/**
 * The key queue's rules (src/gateway/upstream/limits/key-queue.ts), each pinned to the number or the
 * millisecond: how many waiting requests the store's word and the key's connection share let go,
 * when a named wait wakes them, and what the queue holds and forgets. key-queue.test.ts follows a
 * request through the queue; key-queue-refusals.test.ts and key-queue-spacing.test.ts hold the rest
 * of its rules. Real bottleneck limiters on vitest's fake timers, a plain function as the store
 * (test/helpers/key-queue.ts).
 */

import { describe, expect, it, vi } from 'vitest';
import type { Asked } from '../../../../src/gateway/upstream/limits/key-queue.js';
import { fakeClock, queues, request, roomFor, store, T } from '../../../helpers/key-queue.js';

fakeClock();

describe('how many waiting requests go', () => {
  it("lets exactly as many go as the store's word frees, and no more", async () => {
    const { q } = queues();
    const s = store();
    // Each plan's word: nothing more until an answer comes (the congestion window), so only the first word counts.
    const ask = (client: string) => async (): Promise<Asked<number>> => {
      const asked = await s.ask(client)();
      return asked.ok ? { ...asked, room: { free: 0, until: Date.now() + 100, wait: 'answer' } } : asked;
    };
    request(q, ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(0);
    for (const client of ['b', 'c', 'd', 'e']) request(q, ask(client), client);
    s.state.room = 10;
    q.changed('k', roomFor(3));
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a no', '0 a', '0 b', '0 c']);
    expect(q.stats()).toMatchObject({ waiting: 2, jobs: 3 });
  });

  it("lets no more go than the key's free connections, counting those let go that have not started", async () => {
    const { q } = queues({ perKey: 3 });
    const s = store(1);
    const first = request(q, s.ask('a'), 'a');
    request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(0);
    for (const client of ['c', 'd', 'e', 'f']) request(q, s.ask(client), client);
    expect(s.state.asks).toEqual(['0 a', '0 b no']);
    s.state.room = 10;
    // Two words before any job has started: the second finds the connections taken by the first's.
    q.changed('k', roomFor(10));
    q.changed('k', roomFor(10));
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a', '0 b no', '0 b', '0 c']);
    first.admitted?.done();
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a', '0 b no', '0 b', '0 c', '10 d']);
  });

  it('lets the rest go when a second word frees more before the first let-go one started, and keeps nothing in hand', async () => {
    const { q } = queues();
    const s = store();
    const three = [request(q, s.ask('a'), 'a')];
    await vi.advanceTimersByTimeAsync(0);
    three.push(request(q, s.ask('b'), 'b'), request(q, s.ask('c'), 'c'));
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 3;
    q.changed('k', roomFor(1));
    q.changed('k', roomFor(3));
    await vi.advanceTimersByTimeAsync(10);
    expect(three.every((r) => r.admitted !== undefined)).toBe(true);
    // The store is spent: a later request asks once, and then waits for the store's next word.
    request(q, s.ask('d'), 'd');
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a no', '10 a', '10 b', '10 c', '20 d no']);
  });

  it("lets one go by the store's word that a finished request brings, and none when it brings none", async () => {
    const { q } = queues({ perKey: 1 });
    const s = store(1);
    const first = request(q, s.ask('a'), 'a');
    const second = request(q, s.ask('b'), 'b');
    const third = request(q, s.ask('c'), 'c');
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 1;
    // Failed without an answer: the store's last word (spent until T + 30 s) still holds.
    first.admitted?.done();
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a']);
    q.changed('k', roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(second.admitted?.value).toBe(2);
    s.state.room = 1;
    second.admitted?.done(roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(third.admitted?.value).toBe(3);
    expect(s.state.asks).toEqual(['0 a', '20 b', '30 c']);
  });

  it('frees one connection however often a request says it is done', async () => {
    const { q } = queues({ perKey: 2 });
    const s = store(4);
    const first = request(q, s.ask('a'), 'a');
    request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(10);
    first.admitted?.done();
    first.admitted?.done();
    const third = request(q, s.ask('c'), 'c');
    const fourth = request(q, s.ask('d'), 'd');
    await vi.advanceTimersByTimeAsync(10);
    expect([third.admitted?.value, fourth.admitted]).toEqual([3, undefined]);
    expect(s.state.asks).toEqual(['0 a', '0 b', '10 c']);
  });

  it('queues a request behind those waiting though the store has room by now: it does not ask ahead of them', async () => {
    const { q } = queues();
    const s = store();
    const early = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 1;
    const late = request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a no']);
    q.changed('k');
    await vi.advanceTimersByTimeAsync(10);
    expect(early.admitted?.value).toBe(1);
    expect(late.admitted).toBeUndefined();
  });
});

describe("the store's named wait", () => {
  it('asks once when each wait it names ends, and not before', async () => {
    const { q } = queues();
    const s = store(0, T + 1_000);
    const waiting = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(999);
    expect(s.state.asks).toEqual(['0 a no']);
    // Another replica took what the window freed: the store names a second wait.
    s.state.until = T + 2_500;
    await vi.advanceTimersByTimeAsync(2);
    expect(s.state.asks).toEqual(['0 a no', '1001 a no']);
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(1_498);
    expect(s.state.asks).toEqual(['0 a no', '1001 a no']);
    await vi.advanceTimersByTimeAsync(2);
    expect(s.state.asks).toEqual(['0 a no', '1001 a no', '2501 a']);
    expect(waiting.admitted?.value).toBe(1);
  });

  it.each(['answer', 'window'] as const)(
    'asks again at once when the key changed while a refusal (%s) was on its way: the change may postdate it',
    async (wait) => {
      const { q } = queues();
      const asks: string[] = [];
      let room = 0;
      // The store's word is made when it is asked, and comes back 2 ms later (a round trip).
      const ask = async (): Promise<Asked<number>> => {
        asks.push(`${Date.now() - T}${room > 0 ? '' : ' no'}`);
        const word: Asked<number> =
          room > 0
            ? { ok: true, value: 1, room: roomFor(0) }
            : { ok: false, room: { free: 0, until: T + 5_000, wait } };
        await new Promise((resolve) => setTimeout(resolve, 2));
        return word;
      };
      const waiting = request(q, ask, 'a');
      await vi.advanceTimersByTimeAsync(1);
      // Another replica's answer, heard on the subscriber before the reply to the refusal it overtook.
      room = 1;
      q.changed('k');
      await vi.advanceTimersByTimeAsync(10);
      expect(asks).toEqual(['0 no', '3']);
      expect(waiting.admitted?.value).toBe(1);
    },
  );

  it('keeps the earlier wake when the store names a later wait meanwhile', async () => {
    const { q } = queues();
    const s = store(0, T + 1_000);
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    s.state.until = T + 5_000;
    q.changed('k', { free: 0, until: T + 5_000, wait: 'window' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.state.asks).toEqual(['0 a no', '1001 a no']);
  });

  it('wakes at the earlier wait when the store names one sooner meanwhile', async () => {
    const { q } = queues();
    const s = store(0, T + 5_000);
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    // Another replica's answer: the window frees sooner than the store first said.
    q.changed('k', { free: 0, until: T + 1_000, wait: 'window' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(s.state.asks).toEqual(['0 a no', '1001 a no']);
  });

  it('lets the next go at once when a request ends just as the named wait does', async () => {
    const { q } = queues({ perKey: 1 });
    const s = store(1, T + 1_000);
    const first = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(0);
    request(q, s.ask('b'), 'b');
    // After the queue's own wake at T + 1 s, which found the connection taken.
    setTimeout(() => {
      s.state.room = 1;
      first.admitted?.done({ free: 0, until: T + 1_000, wait: 'window' });
    }, 1_000);
    await vi.advanceTimersByTimeAsync(1_010);
    expect(s.state.asks).toEqual(['0 a', '1001 b']);
  });

  it('keeps no timer for a key nothing waits on', async () => {
    const { q } = queues();
    const s = store(0, T + 1_000);
    const first = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(first.admitted?.value).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    // Its one request is still in flight when the store names a wait: nothing is there to wake.
    q.changed('k', { free: 0, until: T + 5_000, wait: 'window' });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('what the queue holds', () => {
  it('says whether requests of a key wait here', async () => {
    const { q } = queues();
    const s = store();
    expect(q.waiting('k')).toBe(false);
    const waiting = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    expect([q.waiting('k'), q.waiting('other')]).toEqual([true, false]);
    s.state.room = 1;
    q.changed('k', roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(waiting.admitted?.value).toBe(1);
    expect(q.waiting('k')).toBe(false);
  });

  it('counts its keys, waiting requests and the requests that went through a job', async () => {
    const { q } = queues({ perKey: 1 });
    const s = store(1);
    const first = request(q, s.ask('a'), 'a');
    request(q, s.ask('b'), 'b');
    request(q, s.ask('c'), 'c');
    await vi.advanceTimersByTimeAsync(10);
    expect(q.stats()).toEqual({ keys: 1, waiting: 2, jobs: 0 });
    s.state.room = 1;
    first.admitted?.done(roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(q.stats()).toEqual({ keys: 1, waiting: 1, jobs: 1 });
  });

  it('forgets a key once none of its requests is in flight or waiting, and not before', async () => {
    const { q } = queues({ perKey: 2 });
    const s = store(10);
    const first = request(q, s.ask('a'), 'a');
    const second = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(0);
    second.admitted?.done(roomFor(8));
    expect(q.stats().keys).toBe(1);
    // The key still holds one connection: of two more, one goes and one waits for it.
    const third = request(q, s.ask('a'), 'a');
    const fourth = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(0);
    expect([third.admitted?.value, fourth.admitted]).toEqual([3, undefined]);
    first.admitted?.done(roomFor(7));
    await vi.advanceTimersByTimeAsync(10);
    third.admitted?.done(roomFor(7));
    fourth.admitted?.done(roomFor(7));
    expect(q.stats().keys).toBe(0);
  });

  it('ignores word of a key it holds nothing for', () => {
    const { q } = queues();
    q.changed('unknown', roomFor(1));
    expect(q.stats()).toEqual({ keys: 0, waiting: 0, jobs: 0 });
  });

  it('asks the store nothing more once closed', async () => {
    const { q } = queues();
    const s = store(0, T + 1_000);
    request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    await q.close();
    expect(q.stats().keys).toBe(0);
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(2_000);
    expect(s.state.asks).toEqual(['0 a no']);
  });
});
