/**
 * The key's queue (src/gateway/upstream/limits/key-queue.ts) and what it relies on from bottleneck
 * 2.19.5 (its last release, pinned): a request goes at once when nothing waits; one the store says
 * no to waits as a job of its key's bottleneck limiter until the store's wait ends or an answer
 * changes it; the clients of a key take turns; deadlines and departures; the key's connection share;
 * what the store planned after its caller was answered is given back. Real bottleneck limiters on
 * vitest's fake timers (bottleneck's own timers included), with a plain function as the store.
 */

import { createRequire } from 'node:module';
import type BottleneckType from 'bottleneck';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createKeyLimiter, yieldsWithoutTimer } from '../../../../src/gateway/upstream/limits/bottleneck.js';
import {
  type Asked,
  createKeyQueues,
  type KeyQueues,
  type Refusal,
} from '../../../../src/gateway/upstream/limits/key-queue.js';
import type { Room } from '../../../../src/gateway/upstream/limits/model.js';

const T = Date.UTC(2026, 10, 27);
beforeEach(() => {
  vi.useFakeTimers({ now: T });
});
afterEach(() => {
  vi.useRealTimers();
});

const open: Room = { free: 10, until: T, wait: undefined };
const full = (until: number): Room => ({ free: 0, until, wait: 'window' });

/** A store that plans while `room` has room, each plan taking one; its answers are recorded. */
function store() {
  const state = { room: 3, until: T + 1_000, asked: 0, given: [] as number[] };
  let next = 0;
  const ask = async (): Promise<Asked<number>> => {
    state.asked++;
    if (state.room <= 0) return { ok: false, room: full(state.until) };
    state.room--;
    return { ok: true, value: ++next, room: state.room > 0 ? open : full(state.until) };
  };
  return { state, ask, giveBack: (value: number) => state.given.push(value) };
}

function queues(perKey = 4, maxQueuedPerClient = 100): { queues: KeyQueues; refused: Refusal[] } {
  const refused: Refusal[] = [];
  return {
    refused,
    queues: createKeyQueues({
      perKey,
      maxQueuedPerClient,
      now: () => Date.now(),
      refuse: (refusal) => {
        refused.push(refusal);
        return new Error(refusal.reason);
      },
    }),
  };
}

const waiter = (clientId: string, waitMs = 10_000, signal?: AbortSignal) => ({
  keyId: 'k',
  clientId,
  deadline: Date.now() + waitMs,
  signal,
});

/** One client's requests on a spent key: `take` queues one, `free` frees one send (`stolen`: another replica takes it before this one's request asks). */
function oneClient() {
  const { queues: q } = queues();
  const s = store();
  s.state.room = 0;
  const order: string[] = [];
  const all: Promise<void>[] = [];
  const take = async (name: string) => {
    all.push(
      q.admit(waiter('a'), s.ask, s.giveBack).then((a) => {
        order.push(name);
        a.done(full(T + 5_000));
      }),
    );
    await vi.advanceTimersByTimeAsync(10);
  };
  const free = async (stolen = false) => {
    s.state.room = 1;
    q.changed('k');
    if (stolen) s.state.room = 0;
    await vi.advanceTimersByTimeAsync(10);
  };
  return { take, free, order, all };
}

describe('the key queue', () => {
  it('lets a request go at once when nothing waits: no bottleneck job', async () => {
    const { queues: q } = queues();
    const { ask, giveBack } = store();
    const admitted = await q.admit(waiter('a'), ask, giveBack);
    expect(admitted.value).toBe(1);
    admitted.done(open);
    expect(q.stats()).toEqual({ keys: 0, waiting: 0, jobs: 0 });
  });

  it('holds a request the store says no to until the wait it named ends, then lets it go', async () => {
    const { queues: q } = queues();
    const s = store();
    for (let i = 0; i < 3; i++) (await q.admit(waiter('a'), s.ask, s.giveBack)).done(full(s.state.until));
    let admitted: number | undefined;
    void q.admit(waiter('a'), s.ask, s.giveBack).then((a) => {
      admitted = a.value;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(admitted).toBeUndefined();
    expect(q.stats().waiting).toBe(1);
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(10);
    expect(admitted).toBe(4);
    expect(q.stats().jobs).toBe(1);
  });

  it("lets a light client's request go before a greedy client's queued ones", async () => {
    const { queues: q } = queues();
    const s = store();
    s.state.room = 0;
    const order: string[] = [];
    const take = (name: string, client: string) =>
      q.admit(waiter(client), s.ask, s.giveBack).then((a) => {
        order.push(name);
        a.done({ free: 0, until: Date.now(), wait: 'window' });
      });
    const all = [take('g1', 'greedy'), take('g2', 'greedy'), take('g3', 'greedy')];
    await vi.advanceTimersByTimeAsync(10);
    all.push(take('light', 'light'));
    await vi.advanceTimersByTimeAsync(10);
    // The window frees one send a time.
    for (let i = 0; i < 4; i++) {
      s.state.room = 1;
      q.changed('k');
      await vi.advanceTimersByTimeAsync(10);
    }
    await Promise.all(all);
    expect(order).toEqual(['g1', 'light', 'g2', 'g3']);
  });

  it('lets a request refused at its turn (another replica took the room) go before those that came after it', async () => {
    const { take, free, order, all } = oneClient();
    for (const name of ['r1', 'r2', 'r3']) await take(name);
    await free();
    await take('r4');
    await free();
    await take('r5');
    // r3's turn: the store says no after all.
    await free(true);
    expect(order).toEqual(['r1', 'r2']);
    for (let i = 0; i < 3; i++) await free();
    await Promise.all(all);
    expect(order).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
  });

  it("keeps a client's requests in the order they came: a later one never goes before an earlier one still waiting", async () => {
    const { take, free, order, all } = oneClient();
    // r3 came while two waited; r4 comes once those two went, while r3 still waits.
    for (const name of ['r1', 'r2', 'r3']) await take(name);
    await free();
    await free();
    await take('r4');
    await free();
    await free();
    await Promise.all(all);
    expect(order).toEqual(['r1', 'r2', 'r3', 'r4']);
  });

  it("counts a request answered at its deadline no more among its client's waiting ones, though its job is still queued", async () => {
    const { queues: q } = queues();
    const s = store();
    s.state.room = 0;
    s.state.until = T + 500;
    const order: string[] = [];
    const gone = [q.admit(waiter('a', 1_000), s.ask, s.giveBack), q.admit(waiter('a', 1_000), s.ask, s.giveBack)];
    const outcomes = gone.map((p) =>
      p.then(
        () => 'admitted',
        (error: Error) => error.message,
      ),
    );
    // Named a wait within their deadline; when it ended, another replica had spent the window again.
    s.state.until = T + 5_000;
    await vi.advanceTimersByTimeAsync(1_001);
    expect(await Promise.all(outcomes)).toEqual(['deadline', 'deadline']);
    // Their jobs still wait in bottleneck; 'a' has nothing waiting: its next request is a first one,
    // and goes before 'b's second.
    const take = (name: string, client: string) =>
      q.admit(waiter(client), s.ask, s.giveBack).then((a) => {
        order.push(name);
        a.done(full(T + 5_000));
      });
    const all = [take('b1', 'b'), take('b2', 'b')];
    await vi.advanceTimersByTimeAsync(10);
    all.push(take('a1', 'a'));
    await vi.advanceTimersByTimeAsync(10);
    for (let i = 0; i < 3; i++) {
      s.state.room = 1;
      q.changed('k');
      await vi.advanceTimersByTimeAsync(10);
    }
    await Promise.all(all);
    expect(order).toEqual(['b1', 'a1', 'b2']);
  });

  it("holds at most the key's connection share in flight, another request going as one ends", async () => {
    const { queues: q } = queues(2);
    const s = store();
    s.state.room = 10;
    const first = await q.admit(waiter('a'), s.ask, s.giveBack);
    await q.admit(waiter('a'), s.ask, s.giveBack);
    let third: number | undefined;
    void q.admit(waiter('a'), s.ask, s.giveBack).then((a) => {
      third = a.value;
    });
    await vi.advanceTimersByTimeAsync(50);
    expect(third).toBeUndefined();
    first.done(open);
    await vi.advanceTimersByTimeAsync(10);
    expect(third).toBe(3);
  });

  it('refuses a request still waiting at its deadline, and asks nothing for it when its job starts later', async () => {
    const { queues: q, refused } = queues();
    const s = store();
    s.state.room = 0;
    s.state.until = T + 500;
    const waiting = q.admit(waiter('a', 1_000), s.ask, s.giveBack);
    const outcome = waiting.then(
      () => 'admitted',
      (error: Error) => error.message,
    );
    // Named a wait within the deadline; when it ended, another replica had spent the window again.
    s.state.until = T + 5_000;
    await vi.advanceTimersByTimeAsync(1_001);
    expect(await outcome).toBe('deadline');
    expect(refused).toMatchObject([{ reason: 'deadline', keyId: 'k', since: T }]);
    expect(s.state.asked).toBe(2);
    // Its job starts when the store's second wait ends; nothing is asked for a caller already answered.
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(s.state.asked).toBe(2);
    expect(s.state.given).toEqual([]);
    expect(q.stats()).toMatchObject({ waiting: 0, jobs: 0 });
  });

  it('refuses at once a request whose wait, by the store, outlasts its deadline', async () => {
    const { queues: q, refused } = queues();
    const s = store();
    s.state.room = 0;
    s.state.until = T + 30_000;
    await expect(q.admit(waiter('a', 1_000), s.ask, s.giveBack)).rejects.toThrow('deadline');
    expect(refused).toHaveLength(1);
    expect(Date.now()).toBe(T);
  });

  it("refuses a client's request past its queue bound, and drops one whose client leaves", async () => {
    const { queues: q, refused } = queues(4, 2);
    const s = store();
    s.state.room = 0;
    const controller = new AbortController();
    const leaving = q.admit(waiter('a', 10_000, controller.signal), s.ask, s.giveBack);
    const kept = q.admit(waiter('a'), s.ask, s.giveBack);
    await expect(q.admit(waiter('a'), s.ask, s.giveBack)).rejects.toThrow('queue');
    expect(refused.map((r) => r.reason)).toEqual(['queue']);
    controller.abort(new Error('the client left'));
    await expect(leaving).rejects.toThrow('the client left');
    s.state.room = 1;
    await vi.advanceTimersByTimeAsync(1_100);
    expect((await kept).value).toBe(1);
  });
});

describe('the key queue, found wanting by its mutation tests', () => {
  // Was a bug: a store's word of `free` let `free` more go at each answer, though those let go and
  // not yet asked would take them: the extra ones were refused at their turn, a wasted round trip each.
  it('lets `free` go, counting those let go that have not asked or heard back yet', async () => {
    const { queues: q } = queues(10);
    const s = store();
    s.state.room = 0;
    s.state.until = T + 30_000;
    // Its word is what is left after each plan (store() says 10 while any is).
    const ask = async (): Promise<Asked<number>> => {
      const asked = await s.ask();
      if (!asked.ok || s.state.room === 0) return asked;
      return { ...asked, room: { free: s.state.room, until: Date.now(), wait: undefined } };
    };
    void q.admit(waiter('a', 60_000), ask, s.giveBack);
    await vi.advanceTimersByTimeAsync(0);
    for (const c of ['b', 'c', 'd', 'e']) void q.admit(waiter(c, 60_000), ask, s.giveBack);
    s.state.room = 3;
    q.changed('k', { free: 3, until: Date.now(), wait: undefined });
    await vi.advanceTimersByTimeAsync(10);
    expect(s.state.asked).toBe(4);
  });

  // Was a bug: a job whose caller had left returned without forgetting its key, which then stayed
  // held (its limiter, its state) until another request of the key ended: for a key not used
  // again, for ever.
  it('forgets a key whose last waiting request left before its job started', async () => {
    const { queues: q } = queues();
    const s = store();
    s.state.room = 0;
    s.state.until = T + 500;
    const refused = q.admit(waiter('a', 1_000), s.ask, s.giveBack).catch((e: Error) => e.message);
    s.state.until = T + 5_000;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await refused).toBe('deadline');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(q.stats()).toEqual({ keys: 0, waiting: 0, jobs: 0 });
  });
});

describe('bottleneck 2.19.5 (light) itself, as the key queue uses it (bottleneck.ts)', () => {
  const Bottleneck: typeof BottleneckType = createRequire(import.meta.url)('bottleneck/light');

  it('yields without a timer between the steps of a job, where bottleneck as it ships waits a turn of the loop for each', async () => {
    // This fails when bottleneck changes what the adapter reaches into (LocalDatastore.yieldLoop).
    const adapted = createKeyLimiter(1);
    expect(yieldsWithoutTimer(adapted)).toBe(true);
    const shipped = new Bottleneck({ maxConcurrent: 1, reservoir: 0 });
    expect(yieldsWithoutTimer(shipped)).toBe(false);
    const started = { adapted: false, shipped: false };
    const jobs = [
      adapted.schedule(async () => {
        started.adapted = true;
      }),
      shipped.schedule(async () => {
        started.shipped = true;
      }),
    ];
    void adapted.incrementReservoir(1);
    void shipped.incrementReservoir(1);
    // The adapted limiter's job needs one timer (bottleneck's own start of it, 0 ms); the shipped
    // one's is still behind its datastore's yields, each a timer, so each a turn of the event loop.
    await vi.advanceTimersToNextTimerAsync();
    expect(started).toEqual({ adapted: true, shipped: false });
    await vi.advanceTimersByTimeAsync(50);
    await Promise.all(jobs);
    expect(started).toEqual({ adapted: true, shipped: true });
  });

  it('holds jobs while its reservoir is 0, and starts as many as it is raised by, by priority', async () => {
    const limiter = createKeyLimiter(10);
    const ran: string[] = [];
    const job = (name: string, priority: number) => limiter.schedule({ priority }, async () => void ran.push(name));
    const jobs = [job('late', 5), job('first', 0), job('second', 1)];
    await vi.advanceTimersByTimeAsync(50);
    expect(ran).toEqual([]);
    void limiter.incrementReservoir(2);
    await vi.advanceTimersByTimeAsync(50);
    expect(ran).toEqual(['first', 'second']);
    void limiter.incrementReservoir(1);
    await vi.advanceTimersByTimeAsync(50);
    await Promise.all(jobs);
    expect(ran).toEqual(['first', 'second', 'late']);
  });

  it('runs at most maxConcurrent jobs at once', async () => {
    const limiter = createKeyLimiter(2);
    await limiter.incrementReservoir(3);
    let running = 0;
    let most = 0;
    const job = () =>
      limiter.schedule(async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running--;
      });
    const jobs = [job(), job(), job()];
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all(jobs);
    expect(most).toBe(2);
  });
});
