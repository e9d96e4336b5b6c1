/**
 * The key queue's refusals and endings (src/gateway/upstream/limits/key-queue.ts): who is refused at
 * once and with what, and how a waiting request ends when its client leaves, its store fails or its
 * store answers after it was answered. Real bottleneck limiters on vitest's fake timers, a plain
 * function as the store (test/helpers/key-queue.ts).
 */

import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import type { Asked } from '../../../../src/gateway/upstream/limits/key-queue.js';
import type { Room } from '../../../../src/gateway/upstream/limits/model.js';
import { fakeClock, queues, request, roomFor, store, T } from '../../../helpers/key-queue.js';

fakeClock();

describe('refused at once', () => {
  it("refuses a request whose named wait outlasts its deadline, and answers with the store's word", async () => {
    const { q, refused } = queues();
    const s = store(0, T + 1_001, 'paused');
    const late = request(q, s.ask('a'), 'a', { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(late.error).toBe('deadline');
    expect(refused).toEqual([
      { keyId: 'k', reason: 'deadline', room: { free: 0, until: T + 1_001, wait: 'paused' }, since: T },
    ]);
    expect(q.stats()).toEqual({ keys: 0, waiting: 0, jobs: 0 });
  });

  it('holds a request whose named wait ends at its deadline, and one waiting for an answer however long', async () => {
    const { q, refused } = queues();
    const s = store(0, T + 1_000);
    const onTime = request(q, s.ask('a'), 'a', { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(0);
    s.state.until = T + 9_000;
    s.state.wait = 'answer';
    q.changed('k', { free: 0, until: T + 9_000, wait: 'answer' });
    const answer = request(q, s.ask('b'), 'b', { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(onTime.error).toBeUndefined();
    expect(answer.error).toBeUndefined();
    expect(q.stats().waiting).toBe(2);
    expect(refused).toEqual([]);
  });

  it('holds a request however far the store names its room, while it has some', async () => {
    const { q, refused } = queues({ perKey: 1 });
    const s = store(1);
    const far: Room = { free: 1, until: T + 60_000, wait: undefined };
    const first = await q.admit(
      { keyId: 'k', clientId: 'a', deadline: T + 1_000, signal: undefined },
      async () => {
        const asked = await s.ask('a')();
        return { ...asked, room: far };
      },
      s.giveBack,
    );
    // Waits for the connection the first holds, not for room.
    const second = request(q, s.ask('b'), 'b', { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(second.error).toBeUndefined();
    s.state.room = 1;
    first.done(roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(second.admitted?.value).toBe(2);
    expect(refused).toEqual([]);
  });

  it("bounds a client's waiting requests at maxQueuedPerClient, counting only those still waiting", async () => {
    const { q, refused } = queues({ maxQueuedPerClient: 2 });
    const s = store();
    const mine = [request(q, s.ask('a'), 'a'), request(q, s.ask('a'), 'a')];
    const over = request(q, s.ask('a'), 'a');
    const other = request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(10);
    expect([over.error, other.error]).toEqual(['queue', undefined]);
    expect(refused).toEqual([
      { keyId: 'k', reason: 'queue', room: { free: 0, until: T + 30_000, wait: 'window' }, since: T },
    ]);
    s.state.room = 1;
    q.changed('k', roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(mine[0]?.admitted?.value).toBe(1);
    // One of its two has gone: one more may wait, not two.
    const again = request(q, s.ask('a'), 'a');
    const overAgain = request(q, s.ask('a'), 'a');
    await vi.advanceTimersByTimeAsync(10);
    expect([again.error, overAgain.error]).toEqual([undefined, 'queue']);
  });

  it('refuses a request whose client has already left, with its reason', async () => {
    const { q } = queues();
    const s = store();
    const controller = new AbortController();
    controller.abort(new Error('the client left'));
    const gone = request(q, s.ask('a'), 'a', { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(0);
    expect(gone.error).toBe('the client left');
    s.state.room = 1;
    q.changed('k', roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asks).toEqual(['0 a no']);
    expect(q.stats()).toEqual({ keys: 0, waiting: 0, jobs: 0 });
  });
});

describe("a waiting request's end", () => {
  it("stops listening to its client's signal once answered, admitted or refused", async () => {
    const { q } = queues();
    const s = store(0, T + 1_000);
    const admitted = new AbortController();
    const refused = new AbortController();
    request(q, s.ask('a'), 'a', { signal: admitted.signal });
    request(q, s.ask('b'), 'b', { signal: refused.signal, waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(10);
    expect(getEventListeners(admitted.signal, 'abort')).toHaveLength(1);
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(getEventListeners(admitted.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(refused.signal, 'abort')).toHaveLength(0);
  });

  it('answers a waiting request with the error its store threw, and lets the next one have the connection', async () => {
    const { q } = queues({ perKey: 1 });
    const s = store(1);
    const first = request(q, s.ask('a'), 'a');
    const failing = request(q, () => Promise.reject(new Error('the store is down')), 'b');
    const next = request(q, s.ask('c'), 'c');
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 1;
    first.admitted?.done(roomFor(1));
    await vi.advanceTimersByTimeAsync(10);
    expect(failing.error).toBe('the store is down');
    expect(next.admitted?.value).toBe(2);
  });

  it('passes on at once the error its store threw for a request that did not wait, and holds nothing for it', async () => {
    const { q } = queues({ perKey: 1 });
    const s = store(1);
    const failing = request(q, () => Promise.reject(new Error('the store is down')), 'a');
    await vi.advanceTimersByTimeAsync(0);
    expect(failing.error).toBe('the store is down');
    expect(q.stats()).toEqual({ keys: 0, waiting: 0, jobs: 0 });
    const next = request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(0);
    expect(next.admitted?.value).toBe(1);
  });

  it('gives back a plan the store made after its caller was answered, and frees the connection for the next', async () => {
    const { q } = queues({ perKey: 1 });
    const s = store(1);
    const first = request(q, s.ask('a'), 'a');
    const slowAsk = async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return s.ask('b')();
    };
    const slow = request(q, slowAsk, 'b', { waitMs: 1_000, giveBack: s.giveBack });
    const next = request(q, s.ask('c'), 'c');
    await vi.advanceTimersByTimeAsync(10);
    s.state.room = 2;
    first.admitted?.done(roomFor(2));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(slow.error).toBe('deadline');
    await vi.advanceTimersByTimeAsync(1_100);
    expect(s.state.given).toEqual([2]);
    expect(next.admitted?.value).toBe(3);
    expect(q.stats()).toMatchObject({ waiting: 0, jobs: 1 });
  });

  it('does not queue again a request the store refused after its caller was answered', async () => {
    const { q } = queues();
    const s = store(0, T + 500);
    const slowAsk = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      s.state.until = T + 5_000;
      return s.ask('a')();
    };
    let asks = 0;
    const slow = request(q, () => (++asks === 1 ? s.ask('a')() : slowAsk()), 'a', { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_100);
    expect(slow.error).toBe('deadline');
    await vi.advanceTimersByTimeAsync(500);
    expect(s.state.asks).toEqual(['0 a no', '1501 a no']);
    expect(q.waiting('k')).toBe(false);
  });

  it('counts a request once when its store fails after its caller was answered', async () => {
    const { q } = queues();
    const s = store(0, T + 500);
    let asks = 0;
    const failing = async (): Promise<Asked<number>> => {
      if (++asks === 1) return s.ask('a')();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      throw new Error('the store is down');
    };
    const gone = request(q, failing, 'a', { waitMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_100);
    expect(gone.error).toBe('deadline');
    s.state.until = T + 30_000;
    request(q, s.ask('b'), 'b');
    await vi.advanceTimersByTimeAsync(500);
    expect(asks).toBe(2);
    expect(q.stats().waiting).toBe(1);
  });

  it('passes an error thrown while giving back a plan to onError', async () => {
    const { q, errors } = queues({ perKey: 1 });
    const s = store(2);
    const first = request(q, s.ask('a'), 'a');
    const slowAsk = async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return s.ask('b')();
    };
    const thrown = new Error('cannot give back');
    request(q, slowAsk, 'b', {
      waitMs: 1_000,
      giveBack: () => {
        throw thrown;
      },
    });
    await vi.advanceTimersByTimeAsync(10);
    first.admitted?.done(roomFor(1));
    await vi.advanceTimersByTimeAsync(2_100);
    expect(errors).toEqual([thrown]);
  });
});
