/**
 * What the key queue's rule tests (test/unit/gateway/upstream/key-queue-*.test.ts) drive it with: a
 * plain function as the budget store, whose asks are recorded as "<ms since T> <client>" (" no" when
 * it refused), and requests on one key, k, whose outcome is read as it stands. Time is vitest's fake
 * clock from T (fakeClock), so a test names each send's millisecond.
 */

import { afterEach, beforeEach, vi } from 'vitest';
import {
  type Admission,
  type Asked,
  createKeyQueues,
  type KeyQueues,
  type KeyQueuesOptions,
  type Refusal,
} from '../../src/gateway/upstream/limits/key-queue.js';
import type { Room, Wait } from '../../src/gateway/upstream/limits/model.js';

export const T = Date.UTC(2026, 10, 27);

/** vitest's fake timers from T for each test of the file (bottleneck's own timers included). */
export function fakeClock(): void {
  beforeEach(() => {
    vi.useFakeTimers({ now: T });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** A store with `room` plans left until `until`, none after; its word after a plan names what is left. */
export function store(room = 0, until = T + 30_000, wait: Wait = 'window') {
  const state = { room, until, wait, asks: [] as string[], given: [] as number[] };
  let planned = 0;
  const word = (): Room =>
    state.room > 0
      ? { free: state.room, until: Date.now(), wait: undefined }
      : { free: 0, until: state.until, wait: state.wait };
  const ask = (client: string) => async (): Promise<Asked<number>> => {
    const at = Date.now() - T;
    if (state.room <= 0) {
      state.asks.push(`${at} ${client} no`);
      return { ok: false, room: word() };
    }
    state.room--;
    state.asks.push(`${at} ${client}`);
    return { ok: true, value: ++planned, room: word() };
  };
  return { state, ask, giveBack: (value: number) => void state.given.push(value) };
}

/** A store keeping one sliding window of `count` sends per `windowMs`, full until its oldest send leaves. */
export function windowStore(count: number, windowMs: number, wait: Wait = 'window') {
  const sends: number[] = [];
  const asks: string[] = [];
  const word = (now: number): Room => {
    const inside = sends.filter((at) => at > now - windowMs);
    if (inside.length < count) return { free: count - inside.length, until: now, wait: undefined };
    return { free: 0, until: (inside[inside.length - count] as number) + windowMs, wait };
  };
  const ask = (client: string) => async (): Promise<Asked<number>> => {
    const now = Date.now();
    if (word(now).free <= 0) {
      asks.push(`${now - T} ${client} no`);
      return { ok: false, room: word(now) };
    }
    sends.push(now);
    asks.push(`${now - T} ${client}`);
    return { ok: true, value: sends.length, room: word(now) };
  };
  return { asks, ask };
}

/** Key queues on the fake clock; what they refused, and what they passed to onError. */
export function queues(options: Partial<KeyQueuesOptions> = {}) {
  const refused: Refusal[] = [];
  const errors: unknown[] = [];
  const q = createKeyQueues({
    perKey: 10,
    maxQueuedPerClient: 100,
    now: () => Date.now(),
    refuse: (refusal) => {
      refused.push(refusal);
      return new Error(refusal.reason);
    },
    onError: (error) => errors.push(error),
    ...options,
  });
  return { q, refused, errors };
}

export interface Outcome {
  admitted?: Admission<number>;
  /** The message it was refused (or failed) with. */
  error?: string;
}

interface RequestOptions {
  waitMs: number;
  signal: AbortSignal;
  giveBack: (value: number) => void;
}

/** A request of `clientId` on key k, waiting `waitMs` at most: its outcome, filled in when it comes. */
export function request(
  q: KeyQueues,
  ask: () => Promise<Asked<number>>,
  clientId: string,
  { waitMs = 60_000, signal, giveBack = () => undefined }: Partial<RequestOptions> = {},
): Outcome {
  const outcome: Outcome = {};
  void q.admit({ keyId: 'k', clientId, deadline: Date.now() + waitMs, signal }, ask, giveBack).then(
    (admitted) => {
      outcome.admitted = admitted;
    },
    (error: Error) => {
      outcome.error = error.message;
    },
  );
  return outcome;
}

/** A request that is over as soon as it is admitted (its answer brings no word of the room). */
export function quick(q: KeyQueues, ask: () => Promise<Asked<number>>, clientId: string): Promise<void> {
  return q
    .admit({ keyId: 'k', clientId, deadline: Date.now() + 60_000, signal: undefined }, ask, () => undefined)
    .then(
      (admitted) => admitted.done(),
      () => undefined,
    );
}

/** The store's word when it has `free` plans of room now. */
export const roomFor = (free: number): Room => ({ free, until: Date.now(), wait: undefined });
