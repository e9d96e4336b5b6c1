/**
 * The per-key limiter stage (docs/architecture.md, "The key's budget"). A request goes upstream
 * after, in order:
 *
 * 1. **its turn** to plan: one request of a key plans at a time, the turns going round-robin across
 *    the key's clients (slots.ts), each client's queue bounded;
 * 2. **its client's share** of the key's window while other clients are active (client-shares.ts);
 * 3. **a job of the key's bottleneck limiter** (key-limiters.ts): its queue, its concurrency (the
 *    key's share of the connection pool) and its reservoir (the upstream's last word, emptied by a
 *    429). Inside the job, right before the send:
 * 4. **a reservation** from the budget store (budget.ts, budget-redis.ts): the plan's windows as
 *    sliding logs and the upstream's gate, atomically across replicas, the authority on whether a
 *    send fits; then a connection slot of the pool, and a last check that no 429 pause is in force
 *    for the key (here or on another replica).
 *
 * A 429 pauses the key (Retry-After, or a backoff from 1 s shared by the key's sends, never less),
 * empties its reservoir so queued sends wait too, and the request is retried after the pause,
 * drawing each retry from its operation's share. A request that would wait past its operation's
 * `waitUntil` fails at once with RATE_LIMITED; waiting requests do not poll the store, except for
 * an answer another replica awaits.
 *
 * With throttling off (PETSTORE_RATE_LIMITS=off) there is no plan for bottleneck to hold: steps 2–3
 * are skipped, a key's connections are bounded by the slots, and a 429 still pauses the key.
 */

import type { RateWindow } from '../../../config.js';
import type { BudgetAggregates } from '../../observability/metrics.js';
import type { CancelSignal } from '../../shared/cancel.js';
import { rateLimited, unavailable } from '../errors.js';
import { canCharge, charge, refund } from '../operation.js';
import type { Stage, UpstreamCall } from '../pipeline.js';
import type { UpstreamResponse } from '../response.js';
import type { BudgetStore, Quota } from './budget.js';
import { type ClientShares, createClientShares } from './client-shares.js';
import { createKeyLimiters, type KeyLimiters } from './key-limiters.js';
import { readRateHeaders, readRetryAfter } from './rate-headers.js';
import { createSlots, type Slots } from './slots.js';

export interface Limiter {
  readonly stage: Stage;
  /** The key's budget as far as the gateway knows it (by key digest), or undefined before any answer. */
  quota(keyId: string): Quota | undefined;
  /**
   * The key's budget in its tightest window as far as this process knows: the configured window
   * from its own sends, or the upstream's last word when that has less left (and a pause means none
   * left). Undefined when nothing is known (throttling off and no upstream word yet).
   */
  describe(keyId: string): BudgetView | undefined;
  /** Aggregates for metrics: never per key. */
  stats(): LimiterStats;
  close(): Promise<void>;
}

export interface BudgetView {
  readonly limit: number;
  readonly remaining: number;
  readonly used: number;
  /** Epoch ms when the window next frees a request, or undefined when nothing is known to be spent. */
  readonly resetAt: number | undefined;
}

export type LimiterStats = BudgetAggregates;

export interface LimiterOptions {
  /** The budget windows; empty when client-side throttling is off (a 429 is still honoured). */
  readonly windows: readonly RateWindow[];
  readonly store: BudgetStore;
  /** Connection slots of the pool (round-robin across keys when short). */
  readonly slots: Slots;
  /** Requests of one key in flight at once: its share of the pool (bottleneck's maxConcurrent). */
  readonly perKey?: number;
  /** Requests one client may have waiting for its turn to plan, per key (default 100). */
  readonly maxQueuedPerClient?: number;
  /** Longest Retry-After or X-RateLimit-Reset believed (PETSTORE_MAX_RETRY_AFTER). */
  readonly maxRetryAfterMs: number;
  /** The longest a request may wait and then run: idle key limiters outlive it (default 60 s). */
  readonly maxRequestMs?: number;
  readonly now?: () => number;
  /** Keys whose quota is remembered for `extensions.rateLimit` (default 10,000). */
  readonly maxKeys?: number;
  /** Retries after a 429 (default 3). */
  readonly maxRetries?: number;
  readonly onEvent?: (event: LimiterEvent) => void;
}

export type LimiterEvent =
  | { readonly type: 'throttled'; readonly waitMs: number }
  | { readonly type: 'heldBack' }
  | { readonly type: 'rejected'; readonly reason: 'budget' | 'queue' | 'share' }
  | { readonly type: 'upstream429'; readonly pauseMs: number }
  | { readonly type: 'sentDuringPause' }
  | { readonly type: 'clamped'; readonly keyId: string; readonly header: 'retry-after' | 'x-ratelimit-reset' }
  | { readonly type: 'bottleneckError'; readonly error: unknown };

/**
 * How often a request waiting for another replica's answer asks the shared store again when the
 * store cannot tell it (answers of this process wake it at once, and so do another replica's when
 * the store `notifies`). Grows to 800 ms while it waits.
 */
const SHARED_POLL_MS = 100;
const SHARED_POLL_MAX_MS = 800;
/** The pause after a 429 whose Retry-After is absent, unreadable, 0 or past: 1 s, doubling per 429 in a row. */
const BACKOFF_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;

/** What a job of the key's limiter came to. */
type Sent =
  | { readonly kind: 'answered'; readonly response: UpstreamResponse; readonly pauseMs?: number }
  | { readonly kind: 'paused'; readonly until: number };

export function createLimiter(options: LimiterOptions): Limiter {
  const now = options.now ?? Date.now;
  const maxRetries = options.maxRetries ?? 3;
  const throttled = options.windows.length > 0;
  // Per-key memos; client keys are unbounded, so the oldest entry goes past this.
  const memoSize = options.maxKeys ?? 10_000;
  const quotas = new Map<string, Quota>();
  const warned = new Set<string>();
  /** The latest pause this process recorded per key: a send while one is in force is counted (it must never happen). */
  const localPauses = new Map<string, number>();
  /** 429s in a row per key: the backoff doubles with each, and a success ends the run. */
  const strikes = new Map<string, number>();
  /** When each request of a key now in flight upstream (from this process) was sent. */
  const sending = new Map<string, Set<{ readonly at: number }>>();
  /** When the upstream last answered a request of the key (from this process). */
  const lastAnswer = new Map<string, number>();
  /** The first window's log as the key's latest reservation left it: what `describe` tells. */
  const usage = new Map<string, { readonly used: number; readonly freeAt: number; readonly at: number }>();
  /** Requests waiting on a key's state to change (an answer, a release, a pause) in this process. */
  const watchers = new Map<string, Set<() => void>>();
  /** Requests waiting for their turn, budget or a slot: a number read at scrape time, not an event per request. */
  let waiting = 0;
  /** Turns to plan: one request of a key at a time, round-robin across its clients. */
  const turns = createSlots({
    total: Number.POSITIVE_INFINITY,
    perKey: 1,
    maxQueuedPerClient: options.maxQueuedPerClient ?? 100,
    now,
  });
  const smallest = options.windows[0];
  const shares: ClientShares | undefined =
    smallest === undefined ? undefined : createClientShares({ window: smallest, maxKeys: memoSize });
  const keyLimiters: KeyLimiters | undefined = throttled
    ? createKeyLimiters({
        maxConcurrent: options.perKey ?? 16,
        idleMs: Math.max(60_000, options.maxRequestMs ?? 0) + 5_000,
        now,
        onError: (error) => options.onEvent?.({ type: 'bottleneckError', error }),
      })
    : undefined;
  /** With throttling off, the slots bound each key's connections (bottleneck's concurrency does otherwise). */
  const perKeySlots = throttled
    ? undefined
    : createSlots({
        total: Number.POSITIVE_INFINITY,
        perKey: options.perKey ?? 16,
        maxQueuedPerClient: 1_000_000,
        now,
      });

  // Another replica's answers wake this one's waiters as its own do.
  options.store.watch?.((keyId) => changed(keyId));

  function remember<V>(map: Map<string, V>, keyId: string, value: V): void {
    if (map.size >= memoSize && !map.has(keyId)) map.delete(map.keys().next().value as string);
    map.set(keyId, value);
  }

  /** Wakes the requests waiting on the key. */
  function changed(keyId: string): void {
    const listeners = watchers.get(keyId);
    if (listeners === undefined) return;
    watchers.delete(keyId);
    for (const wake of listeners) wake();
  }

  /** Resolves when the key's state changes in this process or after `ms`; rejects when the client leaves. */
  function nextChange(keyId: string, ms: number, signal: CancelSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const stop = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        watchers.get(keyId)?.delete(wake);
      };
      const wake = () => {
        stop();
        resolve();
      };
      const onAbort = () => {
        stop();
        reject(signal?.reason);
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      const listeners = watchers.get(keyId) ?? new Set();
      watchers.set(keyId, listeners);
      listeners.add(wake);
    });
  }

  /**
   * Waits for a reservation; returns its sequence number and the epoch of the store that made it: a
   * reservation may lie up to PETSTORE_MAX_WAIT ahead, and Redis may be lost or back meanwhile.
   */
  async function reserve(
    call: UpstreamCall,
    waitingSince: number,
    deadline: number,
  ): Promise<{ seq: number; epoch: number | undefined }> {
    let poll = SHARED_POLL_MS;
    for (let asked = waitingSince; ; asked = now()) {
      const reservation = await options.store.reserve(call.keyId, options.windows, asked, deadline);
      const start = now();
      if (reservation.ok) {
        // The budget it was made on (Redis, or the local share it falls back on), as the store says.
        const { epoch } = reservation;
        remember(usage, call.keyId, { used: reservation.used, freeAt: reservation.freeAt, at: start });
        if (reservation.at <= start) return { seq: reservation.seq, epoch };
        options.onEvent?.({ type: 'throttled', waitMs: reservation.at - start });
        try {
          await sleep(reservation.at - start, call.signal);
        } catch (error) {
          await release(call.keyId, reservation.seq, epoch);
          throw error;
        }
        return { seq: reservation.seq, epoch };
      }
      // Blocked by an answer in flight (a probe's, or one of the last few of a window): it decides,
      // so wait for it up to the deadline. Past it, if the upstream answered nothing for the key all
      // that time while a request sent before the wait is still out, and out for at least a whole
      // operation's wait, the upstream is silent; otherwise the key's budget (or its share of
      // connections) was the wait. A slow but answering upstream (a POST that takes 400 ms while the
      // window's last requests go one at a time) is a budget wait, however short this waiter's was.
      if (reservation.probing) {
        if (start >= deadline) {
          const oldest = Math.min(...[...(sending.get(call.keyId) ?? [])].map((send) => send.at));
          const answeredMeanwhile = (lastAnswer.get(call.keyId) ?? 0) >= waitingSince;
          const silentFor = start - oldest;
          // A request that comes here with no wait left (it spent it queued for its turn) waited on the budget.
          if (
            waitingSince < deadline &&
            oldest <= waitingSince &&
            silentFor >= call.operation.maxWaitMs &&
            !answeredMeanwhile
          ) {
            throw unavailable('the Pet Store has not answered in time');
          }
          options.onEvent?.({ type: 'rejected', reason: 'budget' });
          throw rateLimited(Math.max(1, ((await options.store.pausedUntil(call.keyId)) - start) / 1000));
        }
        // The answer awaited is this process's own (it wakes us), or another replica's: told by the
        // shared store when it can (then up to the probe's time-out), else asked again on a timer.
        const inProcess = (sending.get(call.keyId)?.size ?? 0) > 0;
        const told = inProcess || options.store.notifies === true;
        const untilAnswer = inProcess ? deadline - start : Math.max(1, reservation.retryAt - start);
        await nextChange(call.keyId, Math.min(told ? untilAnswer : poll, deadline - start), call.signal);
        poll = Math.min(SHARED_POLL_MAX_MS, poll * 2);
        continue;
      }
      if (reservation.retryAt > deadline) {
        options.onEvent?.({ type: 'rejected', reason: 'budget' });
        throw rateLimited((reservation.retryAt - start) / 1000);
      }
      // The time the budget frees a send is known: no need to ask before it.
      await nextChange(call.keyId, Math.max(1, reservation.retryAt - start), call.signal);
    }
  }

  /**
   * Gives a reservation back to the store that made it. Once the budget has moved (Redis lost, or back
   * since) the store in force numbers its reservations on its own, so an old number could name one of
   * its requests in flight; and the move already dealt with what was in flight (a rejoin fences it).
   */
  async function release(keyId: string, seq: number, epoch: number | undefined): Promise<void> {
    if (options.store.epoch === epoch) await options.store.release(keyId, seq);
    changed(keyId);
  }

  /** Told by the slots when a wait for a turn or a connection is refused (queue full or deadline). */
  const refusedInQueue = (): void => options.onEvent?.({ type: 'rejected', reason: 'queue' });

  function acquire(slots: Slots, call: UpstreamCall): Promise<() => void> {
    const { clientId, waitUntil } = call.operation;
    return slots.acquire(call.keyId, clientId, Math.max(waitUntil, now()), call.signal, refusedInQueue);
  }

  /**
   * Records what the answer says of the key's budget on the store that planned the request (not on
   * one the budget has moved to since: see `release`), and remembers it for `extensions.rateLimit`.
   */
  async function observe(
    call: UpstreamCall,
    seq: number,
    epoch: number | undefined,
    response: UpstreamResponse,
  ): Promise<void> {
    const at = now();
    remember(lastAnswer, call.keyId, at);
    const headers = readRateHeaders(response, at, options.maxRetryAfterMs);
    if (headers.clamped) warnClamped(call.keyId, 'x-ratelimit-reset');
    keyLimiters?.answered(call.keyId, headers.resetAt === 0 ? undefined : headers);
    if (options.store.epoch !== epoch) return changed(call.keyId);
    const quota = await options.store.observe(call.keyId, { seq, ...headers }, at);
    changed(call.keyId);
    if (quota.resetAt === 0) return;
    remember(quotas, call.keyId, quota);
  }

  function warnClamped(keyId: string, header: 'retry-after' | 'x-ratelimit-reset'): void {
    const id = `${keyId} ${header}`;
    if (warned.has(id)) return;
    if (warned.size >= memoSize) warned.clear();
    warned.add(id);
    options.onEvent?.({ type: 'clamped', keyId, header });
  }

  /**
   * How long a 429 pauses the key: its Retry-After (RFC 9110 section 10.2.3) when that asks for a
   * wait; when it is absent, unreadable, 0 or in the past (a skewed clock), an exponential backoff
   * with jitter from 1 s (RFC 6585 section 4 asks the client to wait; the spec asks for backoff),
   * counted per key, so every send of the key waits it out, not each request on its own.
   */
  function pauseAfter429(keyId: string, response: UpstreamResponse): number {
    const retryAfter = readRetryAfter(response, now(), options.maxRetryAfterMs);
    if (retryAfter?.clamped) warnClamped(keyId, 'retry-after');
    const inARow = (strikes.get(keyId) ?? 0) + 1;
    remember(strikes, keyId, inARow);
    if (retryAfter !== undefined && retryAfter.ms >= BACKOFF_MS) return retryAfter.ms;
    return Math.min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** (inARow - 1)) * (1 + Math.random() / 2);
  }

  /** The send itself, inside the key's job: a reservation, a connection slot, the pause check, the attempt. */
  async function send(
    call: UpstreamCall,
    next: (call: UpstreamCall) => Promise<UpstreamResponse>,
    waitingSince: number,
    deadline: number,
    endTurn: () => void,
    waitEnded: () => void,
  ): Promise<Sent> {
    let seq: number;
    let epoch: number | undefined;
    try {
      ({ seq, epoch } = await reserve(call, waitingSince, deadline));
    } finally {
      // The next client in turn plans now: planned requests never pile up ahead of a light client.
      endTurn();
    }
    shares?.sent(call.keyId, call.operation.clientId, now());
    let releaseSlots: () => void;
    try {
      const pool = await acquire(options.slots, call);
      try {
        const own = perKeySlots === undefined ? undefined : await acquire(perKeySlots, call);
        releaseSlots = () => {
          own?.();
          pool();
        };
      } catch (error) {
        pool();
        throw error;
      }
    } catch (error) {
      await release(call.keyId, seq, epoch);
      throw error;
    }
    let response: UpstreamResponse;
    try {
      // Right before dispatch: a 429 seen meanwhile (here or by another replica) stops this send too.
      const pausedUntil = await options.store.pausedUntil(call.keyId);
      if (pausedUntil > now()) {
        options.onEvent?.({ type: 'heldBack' });
        keyLimiters?.pause(call.keyId, pausedUntil);
        releaseSlots();
        await release(call.keyId, seq, epoch);
        return { kind: 'paused', until: pausedUntil };
      }
      // Planned where the budget no longer is (Redis lost or back since): planned again where it is now.
      // Not released: the store it came from is not the one in force (a rejoin fences what was in flight).
      if (options.store.epoch !== epoch) {
        releaseSlots();
        changed(call.keyId);
        return { kind: 'paused', until: now() };
      }
      if ((localPauses.get(call.keyId) ?? 0) > now()) options.onEvent?.({ type: 'sentDuringPause' });
      waitEnded();
      const sent = { at: now() };
      const sends = sending.get(call.keyId) ?? new Set();
      sending.set(call.keyId, sends.add(sent));
      try {
        response = await next(call);
      } finally {
        sends.delete(sent);
        if (sends.size === 0) sending.delete(call.keyId);
      }
    } catch (error) {
      releaseSlots();
      await release(call.keyId, seq, epoch);
      throw error;
    }
    releaseSlots();
    await observe(call, seq, epoch, response);
    if (response.status !== 429) {
      strikes.delete(call.keyId);
      return { kind: 'answered', response };
    }
    const pauseMs = pauseAfter429(call.keyId, response);
    options.onEvent?.({ type: 'upstream429', pauseMs });
    call.trace?.paused(pauseMs);
    const until = now() + pauseMs;
    remember(localPauses, call.keyId, Math.max(localPauses.get(call.keyId) ?? 0, until));
    keyLimiters?.pause(call.keyId, until);
    await options.store.pause(call.keyId, until, seq);
    changed(call.keyId);
    return { kind: 'answered', response, pauseMs };
  }

  /** One attempt: the key's turn, the client's share, the key's job (or, unthrottled, the send itself). */
  async function attempt(call: UpstreamCall, next: (call: UpstreamCall) => Promise<UpstreamResponse>): Promise<Sent> {
    waiting++;
    const waitStarted = call.trace === undefined ? 0 : performance.now();
    let waitReported = false;
    // The time a request waited for its turn, budget and a connection goes on its span once.
    const waitEnded = () => {
      if (waitReported) return;
      waitReported = true;
      waiting--;
      call.trace?.waited(performance.now() - waitStarted);
    };
    try {
      for (;;) {
        // Past its operation's wait, a request may still go if it needs no wait (a later page of a
        // walk). The first reservation asks at the very instant the deadline was read: a clock that
        // ticked between two reads made "no wait" a millisecond's wait past the deadline, refused.
        const waitingSince = now();
        const deadline = Math.max(call.operation.waitUntil, waitingSince);
        const turn = await acquire(turns, call);
        let turnHeld = true;
        const endTurn = () => {
          if (!turnHeld) return;
          turnHeld = false;
          turn();
        };
        try {
          const own = shares?.nextFor(call.keyId, call.operation.clientId, waitingSince) ?? waitingSince;
          if (own > waitingSince) {
            // This client has had its share of the window while others wait for theirs.
            endTurn();
            if (own > deadline) {
              options.onEvent?.({ type: 'rejected', reason: 'share' });
              throw rateLimited((own - waitingSince) / 1000);
            }
            await sleep(own - waitingSince, call.signal);
            continue;
          }
          if (keyLimiters === undefined) return await send(call, next, waitingSince, deadline, endTurn, waitEnded);
          const blocked = keyLimiters.blockedUntil(call.keyId);
          if (blocked > deadline) {
            options.onEvent?.({ type: 'rejected', reason: 'budget' });
            throw rateLimited((blocked - waitingSince) / 1000);
          }
          return await keyLimiters.schedule(
            call.keyId,
            () => send(call, next, waitingSince, deadline, endTurn, waitEnded),
            // A request that needs no wait may take bottleneck's own few ticks past its deadline.
            Math.max(deadline - now(), START_GRACE_MS),
            call.signal,
            () => {
              refusedInQueue();
              return rateLimited(Math.max(1, (keyLimiters.blockedUntil(call.keyId) - now()) / 1000));
            },
          );
        } finally {
          endTurn();
        }
      }
    } finally {
      waitEnded();
    }
  }

  /** One send through turn, share, job, budget, slot and pause check; a 429 pauses the key and tries again. */
  async function run(call: UpstreamCall, next: (call: UpstreamCall) => Promise<UpstreamResponse>) {
    let current = call;
    for (let retry = 0; ; ) {
      let outcome: Sent;
      try {
        outcome = await attempt(current, next);
      } catch (error) {
        // A retry that never reached the upstream gives its request back to the operation.
        if (current !== call && !current.dispatched) refund(call.operation);
        throw error;
      } finally {
        if (current !== call && current.dispatched) call.dispatched = true;
      }
      if (outcome.kind === 'paused') {
        if (outcome.until > call.operation.waitUntil) throw rateLimited((outcome.until - now()) / 1000);
        continue;
      }
      const { response, pauseMs } = outcome;
      if (pauseMs === undefined) return response;
      const until = now() + pauseMs;
      // A write the upstream refused with 429 was not processed (RFC 6585): it may be sent again.
      // Each try is a request of its operation, drawn from its share like the first.
      if (retry >= maxRetries || until > call.operation.waitUntil || !canCharge(call.operation)) {
        throw rateLimited(pauseMs / 1000);
      }
      charge(call.operation);
      retry++;
      options.onEvent?.({ type: 'heldBack' });
      // A try after a 429's pause gets a timeout of its own.
      current = { ...call, firstAttempt: {}, dispatched: false };
    }
  }

  return {
    stage: (next) => (call) => run(call, next),
    quota: (keyId) => quotas.get(keyId),
    describe(keyId) {
      const at = now();
      const pausedUntil = localPauses.get(keyId) ?? 0;
      const upstream = quotas.get(keyId);
      const known = upstream !== undefined && upstream.resetAt > at ? upstream : undefined;
      const window = options.windows[0];
      let view: BudgetView | undefined;
      if (window !== undefined) {
        const memo = usage.get(keyId);
        // Sends older than a window have left it; those in it are counted as the last reservation saw them.
        const used = memo !== undefined && at < memo.at + window.windowMs && memo.freeAt > at ? memo.used : 0;
        view = {
          limit: window.count,
          remaining: Math.max(0, window.count - used),
          used,
          resetAt: used > 0 ? memo?.freeAt : undefined,
        };
      }
      if (known !== undefined && (view === undefined || known.remaining < view.remaining)) {
        view = {
          limit: known.limit,
          remaining: known.remaining,
          used: Math.max(0, known.limit - known.remaining),
          resetAt: known.resetAt,
        };
      }
      if (view !== undefined && pausedUntil > at) view = { ...view, remaining: 0, resetAt: pausedUntil };
      return view;
    },
    stats() {
      const at = now();
      let lowest: number | undefined;
      for (const quota of quotas.values()) {
        if (quota.resetAt > at && (lowest === undefined || quota.remaining < lowest)) lowest = quota.remaining;
      }
      forgetPastPauses(localPauses, at);
      return {
        keys: options.store.size ?? quotas.size,
        paused: localPauses.size,
        lowestRemaining: lowest,
        waiting,
        jobs: keyLimiters?.stats().jobs ?? 0,
      };
    },
    async close() {
      await keyLimiters?.close();
      await options.store.close();
    },
  };
}

/**
 * How long bottleneck may take to start a job past its deadline: a job needs a few turns of the
 * event loop to start, and a request that needs no wait (a later page of a walk) may still go.
 */
const START_GRACE_MS = 500;

function forgetPastPauses(pauses: Map<string, number>, now: number): void {
  for (const [keyId, until] of pauses) if (until <= now) pauses.delete(keyId);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal: CancelSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
