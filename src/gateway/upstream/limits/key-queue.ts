/**
 * Each API key's queue, run by bottleneck (the design card's "bottleneck-throttled" client): a
 * request that cannot go at once waits as a job of its key's bottleneck limiter, whose
 *
 * - **queue** orders the waiting requests: by priority, a client's first waiting request before
 *   anyone's second (bottleneck's priorities 1-9; only requests still waiting count, not the jobs
 *   of those answered meanwhile), and a client's own in the order they came, so the clients of a
 *   shared key take turns and a light one is not stuck behind a greedy one's thirty, while nothing
 *   is held back that the budget has room for; a request that had its turn and was refused after
 *   all (another replica took the room) waits again at priority 0, ahead of all that have not, so
 *   it is not starved by them;
 * - **reservoir** is fed from the budget store: a unit for each request the store's last word lets
 *   go (room for it in the plan, the upstream's gate, the congestion window), none while the key is
 *   paused or spent, one more when the store's wait ends (a 429's pause, a window's oldest send
 *   leaving it, the upstream's Reset) or an answer changes it;
 * - **concurrency** (maxConcurrent) is the key's share of the connection pool.
 *
 * A request that finds nothing waiting and a connection free asks the store at once, and goes when
 * it has room: bottleneck would start such a job at once too, and a job costs 30-50 µs of CPU and a
 * timer's millisecond (docs/benchmarks.md), a fifth of an upstream request's cost on a busy gateway.
 *
 * What bottleneck cannot do is the thin code here: a waiting request has a deadline and a client
 * that may leave, and bottleneck can neither drop a queued job nor bound its wait (`expiration`
 * bounds the run, not the queue). Its caller is answered at the deadline or when its client leaves,
 * and the job, when bottleneck starts it later, passes its reservoir unit on.
 * bottleneck is used through `bottleneck/light` (its build without Redis clustering, which we do
 * not use: native async functions, where the main build's transpiled generators cost five times
 * as much per job); bottleneck.ts makes its in-process datastore yield without a timer.
 */

import type BottleneckType from 'bottleneck';
import type { CancelSignal } from '../../shared/cancel.js';
import { createKeyLimiter } from './bottleneck.js';
import type { Room } from './model.js';

/** What asking the store for a request came to: planned (its value), or the key's room when not. */
export type Asked<T> =
  | { readonly ok: true; readonly value: T; readonly room: Room }
  | { readonly ok: false; readonly room: Room };

export interface Waiter {
  readonly keyId: string;
  readonly clientId: string;
  /** Epoch ms: a request still waiting then is refused. */
  readonly deadline: number;
  readonly signal: CancelSignal | undefined;
}

/** Why a waiting request was refused, for the caller to answer with. */
export interface Refusal {
  readonly keyId: string;
  /** `queue`: the client's queue is full; `deadline`: its wait ran out (or would, going by the store's word). */
  readonly reason: 'queue' | 'deadline';
  /** The store's last word on the key's room. */
  readonly room: Room | undefined;
  /** Since when the request waited. */
  readonly since: number;
}

export interface Admission<T> {
  readonly value: T;
  /** The request is over (answered or failed): its connection is free; `room` is the store's word after it. */
  done(room?: Room): void;
}

export interface KeyQueues {
  /**
   * Asks the store for the request at once, or when its turn and the key's room come; rejects with
   * `refuse`'s error. What the store planned after the caller was answered goes to `giveBack`.
   */
  admit<T>(waiter: Waiter, ask: () => Promise<Asked<T>>, giveBack: (value: T) => void): Promise<Admission<T>>;
  /** The key's room changed outside a request of this process (another replica's answer): waiting requests ask again. */
  changed(keyId: string, room?: Room): void;
  /** Whether requests of the key wait here. */
  waiting(keyId: string): boolean;
  stats(): { readonly keys: number; readonly waiting: number; readonly jobs: number };
  close(): Promise<void>;
}

export interface KeyQueuesOptions {
  /** Requests of one key in flight at once from this process: its share of the connection pool. */
  readonly perKey: number;
  /**
   * The plan's smallest window (none: throttling off). While two clients or more of a key have been
   * active within it and it was spent lately, waiting requests are let go one at a time,
   * window/count apart, in turn by client.
   */
  readonly window?: { readonly count: number; readonly windowMs: number } | undefined;
  /** Requests one client may have waiting per key. */
  readonly maxQueuedPerClient: number;
  readonly now: () => number;
  /** The error a refused request is answered with. */
  readonly refuse: (refusal: Refusal) => Error;
  /** Bottleneck reported an error of its own (never expected). */
  readonly onError?: (error: unknown) => void;
}

interface Key {
  /** Requests admitted and not yet done. */
  running: number;
  /** Jobs scheduled and not yet started (abandoned ones too, until bottleneck starts them). */
  queued: number;
  /** Reservoir units given and not yet taken by a job. */
  granted: number;
  /** Requests that asked the store and have not had its answer: each takes a unit the answers before it still count free. */
  asking: number;
  /** Times the key's room changed outside a request (changed()): a refusal asked across one is stale. */
  changes: number;
  /** Per client, its requests still waiting (not answered, not started), and the highest priority one of them was given. */
  readonly clients: Map<string, { waiting: number; priority: number }>;
  limiter: BottleneckType | undefined;
  room: Room | undefined;
  wake: NodeJS.Timeout | undefined;
  wakeAt: number;
  /** When each client last asked, most recent last (the active ones share the key's sends). */
  readonly seen: Map<string, number>;
  /**
   * The spaced turn a waiting request last took while several clients were active: turns fall on a
   * grid of window/count, so a send delayed (a timer, a round trip) does not delay every later one.
   */
  lastPaced: number;
  /** Until when the key counts as spent: a window after the store last said its window or Remaining was. */
  spentUntil: number;
}

/** Clients remembered per key at most (the least recently seen go first). */
const MAX_CLIENTS = 1_000;

export function createKeyQueues(options: KeyQueuesOptions): KeyQueues {
  const { now, perKey } = options;
  const spacingMs = options.window === undefined ? 0 : options.window.windowMs / options.window.count;
  const keys = new Map<string, Key>();
  let jobs = 0;
  let waiting = 0;

  function keyOf(keyId: string): Key {
    let key = keys.get(keyId);
    if (key === undefined) {
      key = {
        running: 0,
        queued: 0,
        granted: 0,
        asking: 0,
        changes: 0,
        clients: new Map(),
        limiter: undefined,
        room: undefined,
        wake: undefined,
        wakeAt: 0,
        seen: new Map(),
        lastPaced: 0,
        spentUntil: 0,
      };
      keys.set(keyId, key);
    }
    return key;
  }

  /** Forgets a key holding nothing: its limiter, if it had one, has no job and no timer left. */
  function forgetIfIdle(keyId: string, key: Key): void {
    if (key.running > 0 || key.queued > 0) return;
    clearTimeout(key.wake);
    keys.delete(keyId);
  }

  function limiterOf(key: Key): BottleneckType {
    if (key.limiter === undefined) {
      const limiter = createKeyLimiter(perKey);
      limiter.on('error', (error: unknown) => options.onError?.(error));
      // A job's own failures go to its caller; answering nothing means bottleneck does not retry it.
      limiter.on('failed', () => undefined);
      key.limiter = limiter;
    }
    return key.limiter;
  }

  /**
   * Lets as many waiting requests go as the store's last word and the free connections allow; when
   * that is none, wakes one when the store's wait ends (it asks, and its answer says how many more).
   */
  function grant(key: Key): void {
    const waitingJobs = key.queued - key.granted;
    if (waitingJobs <= 0 || key.limiter === undefined) return;
    const room = key.room;
    const free = room === undefined || room.until <= now() ? Math.max(1, room?.free ?? 1) : room.free;
    // Those let go that have not asked yet, or not heard back, will take their part of `free`.
    let n = Math.min(waitingJobs, free - key.granted - key.asking, perKey - key.running - key.granted);
    if (n > 0 && spaced(key)) {
      // Several clients want more than the key's window holds: its sends are spread at the plan's
      // rate, one to each in turn, so a window's sends do not all go in the burst it frees to
      // whoever waited then. One is let go at a time; one that finds its caller gone, or the store
      // saying no, does not count.
      if (key.granted > 0) return;
      const next = key.lastPaced + spacingMs;
      if (next > now()) return void wakeAt(key, next);
      n = 1;
    }
    if (n > 0) {
      key.granted += n;
      void key.limiter.incrementReservoir(n);
      return;
    }
    if (room !== undefined && room.free <= 0) wakeAt(key, room.until);
  }

  /** Whether the key's waiting requests go spaced: its window was spent lately, with two clients or more active. */
  function spaced(key: Key): boolean {
    return spacingMs > 0 && now() < key.spentUntil && active(key) >= 2;
  }

  /** Clients of the key with a request waiting, or that asked within the plan's smallest window. */
  function active(key: Key): number {
    const since = now() - (options.window?.windowMs ?? 0);
    let count = 0;
    for (const [clientId, at] of key.seen) if (at > since || key.clients.has(clientId)) count++;
    return count;
  }

  function saw(key: Key, clientId: string): void {
    key.seen.delete(clientId);
    key.seen.set(clientId, now());
    if (key.seen.size > MAX_CLIENTS) key.seen.delete(key.seen.keys().next().value as string);
  }

  function wakeAt(key: Key, at: number): void {
    if (key.wake !== undefined && key.wakeAt <= at) return;
    clearTimeout(key.wake);
    key.wakeAt = at;
    key.wake = setTimeout(
      () => {
        key.wake = undefined;
        // The wait the store named is over: one request asks, and its answer says how many more may go.
        key.room = undefined;
        grant(key);
      },
      Math.max(1, at - now()),
    );
  }

  /**
   * The store's word on the key's room. A full window or a spent Remaining marks the key spent until
   * a window after it frees: the sends it frees then go to requests that waited for them.
   */
  function learn(key: Key, room: Room | undefined): void {
    key.room = room;
    if (room?.wait === 'window' || room?.wait === 'gate') {
      key.spentUntil = Math.max(key.spentUntil, room.until + (options.window?.windowMs ?? 0));
    }
  }

  function note(key: Key, room: Room | undefined): void {
    if (room !== undefined) learn(key, room);
    grant(key);
  }

  function admission<T>(keyId: string, key: Key, value: T, end?: () => void): Admission<T> {
    let over = false;
    return {
      value,
      done(room) {
        if (over) return;
        over = true;
        key.running--;
        end?.();
        note(key, room);
        forgetIfIdle(keyId, key);
      },
    };
  }

  /** Refuses at once a request whose wait would outlast its deadline by the store's word, or that its queue has no place for. */
  function refusedAtOnce(key: Key, waiter: Waiter, since: number): Error | undefined {
    if ((key.clients.get(waiter.clientId)?.waiting ?? 0) >= options.maxQueuedPerClient) {
      return options.refuse({ keyId: waiter.keyId, reason: 'queue', room: key.room, since });
    }
    const room = key.room;
    if (room !== undefined && room.free <= 0 && room.wait !== 'answer' && room.until > waiter.deadline) {
      return options.refuse({ keyId: waiter.keyId, reason: 'deadline', room, since });
    }
    return undefined;
  }

  /** A request waiting in its key's queue: answered once, by a turn, its deadline or its client leaving. */
  interface Wait<T> {
    readonly waiter: Waiter;
    readonly key: Key;
    readonly ask: () => Promise<Asked<T>>;
    readonly giveBack: (value: T) => void;
    /**
     * Its priority: 1 + the client's requests waiting before it (up to 9), and never ahead of one of
     * them (bottleneck keeps a priority's jobs in order); 0 once it had its turn and the store said
     * no after all, so it waits again ahead of every request that has not.
     */
    priority: number;
    open: boolean;
    /** Counted among its client's waiting requests (from its scheduling until its turn or its answer). */
    counted: boolean;
    settle(admitted: Admission<T> | undefined, error?: unknown): void;
  }

  function enqueue<T>(
    waiter: Waiter,
    key: Key,
    ask: () => Promise<Asked<T>>,
    giveBack: (value: T) => void,
    since: number,
  ): Promise<Admission<T>> {
    const refused = refusedAtOnce(key, waiter, since);
    if (refused !== undefined) return Promise.reject(refused);
    if (waiter.signal?.aborted) return Promise.reject(waiter.signal.reason);
    return new Promise<Admission<T>>((resolve, reject) => {
      waiting++;
      const onAbort = () => wait.settle(undefined, waiter.signal?.reason);
      const timer = setTimeout(
        () => {
          wait.settle(undefined, options.refuse({ keyId: waiter.keyId, reason: 'deadline', room: key.room, since }));
        },
        Math.max(0, waiter.deadline - now()),
      );
      const wait: Wait<T> = {
        waiter,
        key,
        ask,
        giveBack,
        priority: priorityOf(key.clients.get(waiter.clientId)),
        open: true,
        counted: false,
        settle(admitted, error) {
          if (!wait.open) return;
          wait.open = false;
          waiting--;
          // Answered while its job waits (a deadline, a client gone): it no longer counts as waiting.
          uncount(wait);
          clearTimeout(timer);
          waiter.signal?.removeEventListener('abort', onAbort);
          if (admitted === undefined) reject(error);
          else resolve(admitted);
        },
      };
      waiter.signal?.addEventListener('abort', onAbort, { once: true });
      schedule(wait);
    });
  }

  /**
   * A new request's priority: after its client's requests still waiting, and not ahead of any of
   * them. Counting them alone would let a later request overtake an earlier one of its own client
   * (one that came while three waited has 4; one that comes once two of those went has 2), and one
   * could be overtaken so until its deadline: a query of a client with three in flight waited its
   * whole 5 s through two windows' sends (test/system/redis-ha.test.ts).
   */
  function priorityOf(client: { waiting: number; priority: number } | undefined): number {
    return client === undefined ? 1 : Math.min(9, Math.max(1 + client.waiting, client.priority));
  }

  function uncount<T>(wait: Wait<T>): void {
    if (!wait.counted) return;
    wait.counted = false;
    const { clients } = wait.key;
    // Counted: schedule() made its client's entry, and it stays while one of them is counted.
    const client = clients.get(wait.waiter.clientId) as { waiting: number };
    if (client.waiting > 1) client.waiting--;
    else clients.delete(wait.waiter.clientId);
  }

  /** Queues the request as a job of its key's bottleneck limiter, and lets waiting ones go if the store's word allows. */
  function schedule<T>(wait: Wait<T>): void {
    const { key, waiter } = wait;
    const client = key.clients.get(waiter.clientId);
    if (client === undefined) key.clients.set(waiter.clientId, { waiting: 1, priority: wait.priority });
    else {
      client.waiting++;
      client.priority = Math.max(client.priority, wait.priority);
    }
    wait.counted = true;
    key.queued++;
    limiterOf(key)
      .schedule({ priority: wait.priority }, () => turn(wait))
      .catch((error: unknown) => {
        // Only bottleneck itself can fail here (the job's own errors went to its caller).
        options.onError?.(error);
        wait.settle(undefined, error);
      });
    grant(key);
  }

  /**
   * Asks the store, counted as asking until its word is back (and before anything it says is acted
   * on). A refusal whose key changed meanwhile is stale: the change (another replica's answer, heard
   * on a connection of its own) may have come before this reply though the store ran it after, and
   * nobody would tell the key again; its wait is taken as over, so one request asks again at once.
   */
  async function askStore<T>(key: Key, ask: () => Promise<Asked<T>>): Promise<Asked<T>> {
    key.asking++;
    const changes = key.changes;
    try {
      const asked = await ask();
      return asked.ok || key.changes === changes ? asked : { ok: false, room: { ...asked.room, until: now() } };
    } finally {
      key.asking--;
    }
  }

  /** The job: bottleneck gave the request its turn; it asks the store, and holds its connection until it is over. */
  async function turn<T>(wait: Wait<T>): Promise<void> {
    const { key, waiter } = wait;
    key.queued--;
    key.granted = Math.max(0, key.granted - 1);
    uncount(wait);
    // Its caller has gone (deadline or client): nothing is asked, and its unit goes to the next; a
    // key left holding nothing is forgotten.
    if (!wait.open) {
      grant(key);
      return void forgetIfIdle(waiter.keyId, key);
    }
    key.running++;
    let asked: Asked<T>;
    try {
      asked = await askStore(key, wait.ask);
    } catch (error) {
      key.running--;
      wait.settle(undefined, error);
      return void grant(key);
    }
    if (!asked.ok || !wait.open) {
      key.running--;
      learn(key, asked.room);
      // Planned after its caller was answered (the store was slow): given back, never sent.
      if (asked.ok) wait.giveBack(asked.value);
      // Refused after all (another replica took the room): it waits again.
      else if (wait.open) {
        wait.priority = 0;
        schedule(wait);
      }
      return void grant(key);
    }
    jobs++;
    // On the grid when it runs late; never ahead of now: a burst of turns while the key was not spaced
    // (13 in 300 ms) would otherwise put the next spaced turn 13 spacings away, the key idle meanwhile.
    key.lastPaced = Math.min(now(), Math.max(key.lastPaced + spacingMs, now() - spacingMs));
    // What the store said after planning it: more may go at once.
    learn(key, asked.room);
    grant(key);
    // The job holds its connection (bottleneck's concurrency) until the request is over.
    const { value } = asked;
    await new Promise<void>((end) => wait.settle(admission(waiter.keyId, key, value, end)));
  }

  return {
    async admit(waiter, ask, giveBack) {
      const key = keyOf(waiter.keyId);
      const since = now();
      saw(key, waiter.clientId);
      if (key.queued === 0 && key.running < perKey) {
        key.running++;
        let asked: Awaited<ReturnType<typeof ask>>;
        try {
          asked = await askStore(key, ask);
        } catch (error) {
          key.running--;
          forgetIfIdle(waiter.keyId, key);
          throw error;
        }
        if (asked.ok) {
          learn(key, asked.room);
          return admission(waiter.keyId, key, asked.value);
        }
        key.running--;
        learn(key, asked.room);
      }
      try {
        return await enqueue(waiter, key, ask, giveBack, since);
      } finally {
        forgetIfIdle(waiter.keyId, key);
      }
    },
    changed(keyId, room) {
      const key = keys.get(keyId);
      if (key === undefined) return;
      key.changes++;
      learn(key, room);
      grant(key);
    },
    waiting: (keyId) => (keys.get(keyId)?.queued ?? 0) > 0,
    stats: () => ({ keys: keys.size, waiting, jobs }),
    async close() {
      for (const key of keys.values()) clearTimeout(key.wake);
      keys.clear();
    },
  };
}
