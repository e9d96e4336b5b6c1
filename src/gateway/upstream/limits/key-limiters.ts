/**
 * Each API key's sends run as jobs of that key's bottleneck limiter (the design card's
 * "bottleneck-throttled client"), from one `Bottleneck.Group` keyed by the key's digest. The
 * limiter holds the key's requests back with what bottleneck does well:
 *
 * - its **queue**, in which a job waits while the key cannot send;
 * - its **concurrency** (`maxConcurrent`): the key's share of the upstream connection pool, so slow
 *   answers for one key never hold another key's requests;
 * - its **reservoir**: the sends the upstream's last word allows (X-RateLimit-Remaining less the
 *   key's other requests in flight, refilled to X-RateLimit-Limit at X-RateLimit-Reset), emptied by
 *   a 429 until its pause ends, so sends already queued wait too; one send (a probe) follows it.
 *
 * What bottleneck cannot do is the thin code here. A job has a deadline and a client that may
 * leave, and bottleneck can neither drop a queued job nor bound its wait (`expiration` bounds the
 * run, not the queue): the caller is answered at its deadline or when its client leaves, and the
 * job, when bottleneck starts it later, is abandoned: it sends nothing and gives its reservoir unit
 * back. A job that throws rejects its caller and frees its slot; bottleneck's `error` and `failed`
 * events are listened to. Idle limiters are dropped (`deleteKey`) as soon as they hold no job and no
 * upstream word, with Group's own idle timeout as the backstop, so memory stays bounded for any
 * number of keys.
 *
 * Two changes to bottleneck's behaviour, on our limiters only, where it cost most for nothing we
 * use (docs/benchmarks.md has the numbers):
 * - its local datastore yields to the event loop with `setTimeout(0)` three to four times per job,
 *   each at least 1 ms in Node, so a lone job waited 5-7 ms before it ran: its zero-delay yield is a
 *   `setImmediate`, which yields the same way without the timer's floor;
 * - it triggers about ten events per job, each an async generator that first triggers a `debug`
 *   event with a message built for it, listened to or not (a quarter of the 1.2 M instructions a
 *   job took under callgrind): an event nobody listens to resolves at once.
 * Bottleneck 2.19.5 is its last release (2019) and is pinned; test/unit/gateway/upstream/
 * key-limiters.test.ts fails if an internal this relies on moves.
 */

import { createRequire } from 'node:module';
import type BottleneckType from 'bottleneck';
import type { CancelSignal } from '../../shared/cancel.js';

// bottleneck is CommonJS; its typings describe the module itself.
const Bottleneck: typeof BottleneckType = createRequire(import.meta.url)('bottleneck');

export interface KeyLimitersOptions {
  /** Jobs of one key running at once: the key's share of the upstream connections. */
  readonly maxConcurrent: number;
  /** Backstop for Group's cleanup: longer than any job may wait and run (PETSTORE_MAX_WAIT + timeout). */
  readonly idleMs: number;
  /** Bottleneck reported an error of its own (never expected). */
  readonly onError?: (error: unknown) => void;
  /** The clock pauses and Resets are given in (epoch ms). */
  readonly now?: () => number;
  /** Idle keys whose limiter is kept for what the upstream said of them (default 1,000). */
  readonly maxIdleKeys?: number;
}

/** The upstream's last word on a key's window, from its X-RateLimit-* headers. */
export interface UpstreamWord {
  readonly limit: number;
  readonly remaining: number;
  /** Epoch ms. */
  readonly resetAt: number;
}

export interface KeyLimiters {
  /**
   * Runs `job` as a job of the key's limiter and resolves with its result. If it has not started
   * within `waitMs`, rejects with `onDeadline()`; if the client leaves first, with the signal's
   * reason; the job then never runs.
   */
  schedule<T>(
    keyId: string,
    job: () => Promise<T>,
    waitMs: number,
    signal: CancelSignal | undefined,
    onDeadline: () => Error,
  ): Promise<T>;
  /**
   * What an answer to one of the key's jobs said (called from that job): with a word, the reservoir
   * becomes its Remaining less the key's other jobs in flight, refilled to its Limit at its Reset;
   * without one, nothing is known, unless a pause or an earlier word is still in force.
   */
  answered(keyId: string, word: UpstreamWord | undefined): void;
  /** No send for the key until `until` (a 429's pause); then one send, whose answer decides. */
  pause(keyId: string, until: number): void;
  /** Until when the key's limiter will start nothing (0: it may start a job now). */
  blockedUntil(keyId: string): number;
  /** Keys with a limiter now, and jobs that ran a send (for metrics and tests). */
  stats(): { readonly keys: number; readonly jobs: number; readonly running: number };
  close(): Promise<void>;
}

interface KeyState {
  readonly limiter: BottleneckType;
  /** Jobs scheduled and not yet settled. */
  pending: number;
  /** Jobs running now. */
  running: number;
  /** The reservoir's next refill: at a Reset, or at the end of a pause. */
  refill: NodeJS.Timeout | undefined;
  refillAt: number;
  /** Epoch ms until which a 429's pause holds the reservoir empty. */
  pausedUntil: number;
  /** The reservoir is 0 until `refillAt`. */
  empty: boolean;
}

export function createKeyLimiters(options: KeyLimitersOptions): KeyLimiters {
  const group = new Bottleneck.Group({ maxConcurrent: options.maxConcurrent, timeout: options.idleMs });
  const now = options.now ?? Date.now;
  const keys = new Map<string, KeyState>();
  /** Idle keys kept for the upstream word their limiter holds, oldest first. */
  const idleKnown = new Set<string>();
  const maxIdleKeys = options.maxIdleKeys ?? 1_000;
  let jobs = 0;
  let running = 0;

  group.on('created', (limiter: BottleneckType) => {
    fastYields(limiter);
    quietEvents(limiter);
    limiter.on('error', (error: unknown) => options.onError?.(error));
    // A job that throws is `failed`; answering nothing means bottleneck does not retry it.
    limiter.on('failed', () => undefined);
  });

  function stateOf(keyId: string): KeyState {
    let state = keys.get(keyId);
    if (state !== undefined) idleKnown.delete(keyId);
    else {
      state = {
        limiter: group.key(keyId),
        pending: 0,
        running: 0,
        refill: undefined,
        refillAt: 0,
        pausedUntil: 0,
        empty: false,
      };
      keys.set(keyId, state);
    }
    return state;
  }

  /**
   * Drops the key's limiter once it holds no job and no word of the upstream's still to come true;
   * one that holds such a word is kept, idle, among the last `maxIdleKeys` at most (past them the
   * oldest goes: the budget store still holds that word, so forgetting it here sends nothing more).
   */
  function dropIfIdle(keyId: string, state: KeyState): void {
    if (state.pending > 0 || keys.get(keyId) !== state) return;
    if (state.refill !== undefined) {
      idleKnown.delete(keyId);
      idleKnown.add(keyId);
      if (idleKnown.size > maxIdleKeys) {
        const oldest = idleKnown.values().next().value as string;
        const dropped = keys.get(oldest);
        if (dropped !== undefined) clearTimeout(dropped.refill);
        drop(oldest);
      }
      return;
    }
    drop(keyId);
  }

  function drop(keyId: string): void {
    idleKnown.delete(keyId);
    keys.delete(keyId);
    void group.deleteKey(keyId);
  }

  /** Sets the reservoir to `value` now, and to `then` at `at`. */
  function reservoir(keyId: string, state: KeyState, value: number | null, at: number, then: number | null): void {
    clearTimeout(state.refill);
    state.empty = value === 0;
    state.refillAt = at;
    void update(state.limiter, { reservoir: value });
    state.refill = setTimeout(
      () => {
        state.refill = undefined;
        state.empty = then === 0;
        void update(state.limiter, { reservoir: then }).then(() => dropIfIdle(keyId, state));
      },
      Math.max(0, at - now()),
    );
    state.refill.unref();
  }

  return {
    schedule<T>(
      keyId: string,
      job: () => Promise<T>,
      waitMs: number,
      signal: CancelSignal | undefined,
      onDeadline: () => Error,
    ): Promise<T> {
      const state = stateOf(keyId);
      state.pending++;
      return new Promise<T>((resolve, reject) => {
        let waiting = true;
        const stopWaiting = () => {
          waiting = false;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        };
        const leave = (error: unknown) => {
          if (!waiting) return;
          stopWaiting();
          reject(error);
        };
        const onAbort = () => leave(signal?.reason);
        const timer = setTimeout(() => leave(onDeadline()), Math.max(0, waitMs));
        if (signal?.aborted) leave(signal.reason);
        else signal?.addEventListener('abort', onAbort, { once: true });
        const scheduled = state.limiter.schedule(async () => {
          if (!waiting) {
            // Its caller has gone: nothing is sent, and the unit it took from the reservoir goes back.
            if (!state.empty && (await state.limiter.currentReservoir()) !== null) {
              await state.limiter.incrementReservoir(1);
            }
            return;
          }
          stopWaiting();
          jobs++;
          running++;
          state.running++;
          try {
            resolve(await job());
          } catch (error) {
            reject(error);
          } finally {
            running--;
            state.running--;
          }
        });
        const done = () => {
          state.pending--;
          dropIfIdle(keyId, state);
        };
        scheduled.then(done, (error: unknown) => {
          // Only bottleneck itself can fail here (the job's own errors went to its caller).
          options.onError?.(error);
          leave(error);
          done();
        });
      });
    },

    answered(keyId, word) {
      const state = keys.get(keyId);
      if (state === undefined) return;
      const at = now();
      // A 429's pause is not lifted by answers to requests sent before it.
      if (state.pausedUntil > at) return;
      if (word === undefined) {
        // Nothing said: after a pause's probe, the key is unknown again (the budget store probes);
        // a Reset still to come keeps what it set.
        if (state.refill === undefined) void update(state.limiter, { reservoir: null });
        return;
      }
      if (word.resetAt <= at) return;
      reservoir(keyId, state, Math.max(0, word.remaining - (state.running - 1)), word.resetAt, word.limit);
    },

    pause(keyId, until) {
      const state = stateOf(keyId);
      if (until <= state.pausedUntil) return;
      state.pausedUntil = until;
      // Empty until the pause ends (or a Reset after it, which then refills), then one send.
      if (state.empty && state.refillAt >= until) return;
      reservoir(keyId, state, 0, until, 1);
    },

    blockedUntil(keyId) {
      const state = keys.get(keyId);
      return state?.empty ? state.refillAt : 0;
    },

    stats() {
      return { keys: keys.size, jobs, running };
    },

    async close() {
      for (const state of keys.values()) clearTimeout(state.refill);
      keys.clear();
      await Promise.all(group.keys().map((keyId) => group.deleteKey(keyId)));
    },
  };
}

/** `limiter.updateSettings`, which returns a promise (its typings say it returns the limiter). */
function update(limiter: BottleneckType, settings: BottleneckType.ConstructorOptions): Promise<unknown> {
  return limiter.updateSettings(settings) as unknown as Promise<unknown>;
}

const SETTLED = Promise.resolve();

/** An event of the limiter with no listener (debug, received, queued, executing, done…) costs nothing. */
function quietEvents(limiter: BottleneckType): void {
  const events = (limiter as unknown as { Events?: { _events?: unknown; trigger?: unknown } }).Events;
  if (events === undefined || typeof events.trigger !== 'function' || typeof events._events !== 'object') {
    throw new Error('bottleneck: its limiter has no Events.trigger (a version other than 2.19.5?)');
  }
  type Events = { _events: Record<string, unknown> };
  const trigger = events.trigger as (this: Events, name: string, ...args: unknown[]) => Promise<unknown>;
  events.trigger = function (this: Events, name: string, ...args: unknown[]) {
    return this._events[name] === undefined ? SETTLED : trigger.call(this, name, ...args);
  };
}

/**
 * Bottleneck's local datastore yields with `setTimeout(resolve, t)`, t = 0 on every path a job
 * takes (submit, register, free): zero-delay yields become a setImmediate, on this limiter's store.
 */
function fastYields(limiter: BottleneckType): void {
  const store = (limiter as unknown as { _store?: { yieldLoop?: unknown } })._store;
  if (store === undefined || typeof store.yieldLoop !== 'function') {
    throw new Error('bottleneck: its local datastore has no yieldLoop (a version other than 2.19.5?)');
  }
  store.yieldLoop = (t = 0) =>
    new Promise<void>((resolve) => {
      if (t === 0) setImmediate(resolve);
      else setTimeout(resolve, t);
    });
}
