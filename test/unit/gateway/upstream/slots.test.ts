/**
 * The connection slots (src/gateway/upstream/limits/slots.ts) at their bounds: a key's share and the
 * pool exactly, a client's queue exactly, deadlines to the millisecond, the turns across keys and
 * clients, and which keys count. Deadlines run on vitest's fake timers with the slots' clock on them;
 * the basics are in stages.test.ts.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSlots, type SlotsOptions } from '../../../../src/gateway/upstream/limits/slots.js';
import { watch } from '../../../helpers/until.js';

const T = Date.UTC(2026, 0, 5);
beforeEach(() => {
  vi.useFakeTimers({ now: T });
});
afterEach(() => {
  vi.useRealTimers();
});

const slotsOf = (options: Partial<SlotsOptions> = {}) =>
  createSlots({ total: 8, perKey: 8, maxQueuedPerClient: 8, now: () => Date.now(), ...options });

const flush = () => vi.advanceTimersByTimeAsync(0);
const WAIT = T + 60_000;
const QUEUE_FULL = {
  code: 'RATE_LIMITED',
  retryAfterSeconds: 1,
  message: 'too many requests are waiting for this API key; retry shortly',
};

describe('slots at their bounds', () => {
  it("lets a key hold exactly its share: another key's release gives it nothing more", async () => {
    const slots = slotsOf({ perKey: 2 });
    const a1 = await slots.acquire('a', 'c', WAIT);
    await slots.acquire('a', 'c', WAIT);
    // Two slots of one key are one key.
    expect(slots.keys).toBe(1);
    const third = watch(slots.acquire('a', 'c', WAIT));
    (await slots.acquire('b', 'c', WAIT))();
    await flush();
    expect(third.settled).toBe(false);
    expect([slots.taken, slots.waiting]).toEqual([2, 1]);
    a1();
    await flush();
    expect(third.settled).toBe(true);
    expect([slots.taken, slots.waiting, slots.keys]).toEqual([2, 0, 1]);
  });

  it('fills the pool exactly, and gives a freed slot to one waiting request', async () => {
    const slots = slotsOf({ total: 2, perKey: 2 });
    const a = await slots.acquire('a', 'c', WAIT);
    await slots.acquire('b', 'c', WAIT);
    const c = watch(slots.acquire('c', 'c', WAIT));
    const d = watch(slots.acquire('d', 'c', WAIT));
    await flush();
    expect([c.settled, d.settled, slots.taken]).toEqual([false, false, 2]);
    a();
    await flush();
    expect([c.settled, d.settled, slots.taken, slots.waiting]).toEqual([true, false, 2, 1]);
  });

  it('frees one slot however often its release is called', async () => {
    const slots = slotsOf({ total: 1 });
    const release = await slots.acquire('a', 'c', WAIT);
    const second = watch(slots.acquire('a', 'c', WAIT));
    const third = watch(slots.acquire('b', 'c', WAIT));
    release();
    release();
    await flush();
    expect([second.settled, third.settled, slots.taken]).toEqual([true, false, 1]);
  });

  it("queues exactly maxQueuedPerClient of a client's requests, and refuses the next at once", async () => {
    const slots = slotsOf({ total: 1, maxQueuedPerClient: 2 });
    let refused = 0;
    await slots.acquire('a', 'c', WAIT);
    const queued = [watch(slots.acquire('a', 'c', WAIT)), watch(slots.acquire('a', 'c', WAIT))];
    const over = watch(slots.acquire('a', 'c', WAIT, undefined, () => refused++));
    // Another client of the key has a queue of its own.
    const other = watch(slots.acquire('a', 'other', WAIT));
    await Promise.resolve();
    expect(over.error).toMatchObject(QUEUE_FULL);
    expect(refused).toBe(1);
    expect([queued[0]?.settled, queued[1]?.settled, other.settled, slots.waiting]).toEqual([false, false, false, 3]);
  });
});

describe('slots and deadlines', () => {
  it('refuses at once a request whose deadline has come, and keeps one with a millisecond left', async () => {
    const slots = slotsOf({ total: 1 });
    let refused = 0;
    await slots.acquire('a', 'c', WAIT);
    const now = watch(slots.acquire('a', 'c', T, undefined, () => refused++));
    const past = watch(slots.acquire('a', 'c', T - 1, undefined, () => refused++));
    const soon = watch(slots.acquire('a', 'c', T + 1, undefined, () => refused++));
    await Promise.resolve();
    expect(now.error).toMatchObject(QUEUE_FULL);
    expect(past.error).toMatchObject(QUEUE_FULL);
    expect([soon.settled, refused, slots.waiting]).toEqual([false, 2, 1]);
  });

  it('holds a waiting request to its deadline, to the millisecond, and says then that it refused it', async () => {
    const slots = slotsOf({ total: 1 });
    let refused = 0;
    await slots.acquire('a', 'c', WAIT);
    const waiting = watch(slots.acquire('a', 'c', T + 1_000, undefined, () => refused++));
    await vi.advanceTimersByTimeAsync(999);
    expect([waiting.settled, refused]).toEqual([false, 0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.error).toMatchObject(QUEUE_FULL);
    expect([refused, slots.waiting, slots.keys]).toEqual([1, 0, 1]);
  });

  it('reads deadlines on the clock it is given', async () => {
    // A clock a day behind the wall: read from Date.now, every deadline here would be long past.
    const day = 86_400_000;
    const slots = createSlots({ total: 1, perKey: 1, maxQueuedPerClient: 8, now: () => Date.now() - day });
    const release = await slots.acquire('a', 'c', T - day + 1_000);
    const waiting = watch(slots.acquire('a', 'c', T - day + 1_000));
    await flush();
    expect(waiting.settled).toBe(false);
    release();
    await flush();
    expect(waiting.error).toBeUndefined();
    expect(waiting.settled).toBe(true);
  });

  it('refuses a request whose client has already left with its reason, taking nothing', async () => {
    const slots = slotsOf();
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(slots.acquire('a', 'c', WAIT, controller.signal)).rejects.toThrow('gone');
    expect([slots.taken, slots.keys]).toEqual([0, 0]);
  });
});

describe('slots in turn', () => {
  it('serves keys in turn, not a key whose second client joined its queue first', async () => {
    const slots = slotsOf({ total: 1, perKey: 1 });
    const granted: string[] = [];
    const take = (keyId: string, clientId: string) =>
      slots.acquire(keyId, clientId, WAIT).then((release) => {
        granted.push(`${keyId}/${clientId}`);
        return release;
      });
    const holder = await slots.acquire('x', 'c', WAIT);
    const a1 = take('a', 'c1');
    const a2 = take('a', 'c2');
    const b1 = take('b', 'c1');
    holder();
    (await a1)();
    (await b1)();
    await a2;
    expect(granted).toEqual(['a/c1', 'b/c1', 'a/c2']);
  });

  it("keeps a client's other requests and the key's other clients in turn when one leaves", async () => {
    const slots = slotsOf({ total: 1, perKey: 1 });
    const holder = await slots.acquire('a', 'c', WAIT);
    const leaving = new AbortController();
    const left = watch(slots.acquire('a', 'c1', WAIT, leaving.signal));
    const stays = watch(slots.acquire('a', 'c1', WAIT));
    const otherLeaving = new AbortController();
    const otherLeft = watch(slots.acquire('a', 'c2', WAIT, otherLeaving.signal));
    const other = watch(slots.acquire('b', 'c2', WAIT));
    leaving.abort(new Error('gone'));
    otherLeaving.abort(new Error('gone too'));
    await flush();
    expect([left.error, otherLeft.error]).toMatchObject([{ message: 'gone' }, { message: 'gone too' }]);
    expect(slots.waiting).toBe(2);
    holder();
    await flush();
    expect([stays.settled, other.settled]).toEqual([true, false]);
    (stays.value as () => void)();
    await flush();
    expect(other.settled).toBe(true);
  });
});

describe('which keys count', () => {
  it('counts a key that comes back after going idle once, and not once it is idle again', async () => {
    const slots = slotsOf();
    (await slots.acquire('a', 'c', WAIT))();
    expect(slots.keys).toBe(0);
    const again = await slots.acquire('a', 'c', WAIT);
    expect(slots.keys).toBe(1);
    again();
    expect(slots.keys).toBe(0);
  });

  it('counts a key with requests waiting and no slot, through refusals and departures of its clients', async () => {
    const slots = slotsOf({ total: 1, perKey: 1 });
    const holder = await slots.acquire('x', 'c', WAIT);
    const leaving = new AbortController();
    const waiting = watch(slots.acquire('a', 'c1', WAIT, leaving.signal));
    await expect(slots.acquire('a', 'c2', T)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(slots.keys).toBe(2);
    leaving.abort(new Error('gone'));
    await flush();
    expect(waiting.settled).toBe(true);
    expect(slots.keys).toBe(1);
    holder();
    expect(slots.keys).toBe(0);
  });

  it('sweeps idle keys past a thousand, never a key holding a slot or with requests waiting', async () => {
    const slots = slotsOf({ perKey: 1 });
    const busy = await slots.acquire('busy', 'c', WAIT);
    const next = watch(slots.acquire('busy', 'c', WAIT));
    for (let i = 0; i < 1_001; i++) (await slots.acquire(`idle-${i}`, 'c', WAIT))();
    expect([slots.keys, slots.taken, slots.waiting]).toEqual([1, 1, 1]);
    busy();
    await flush();
    expect(next.settled).toBe(true);
    expect(slots.keys).toBe(1);
    (next.value as () => void)();
    expect([slots.keys, slots.taken]).toEqual([0, 0]);
  });
});
