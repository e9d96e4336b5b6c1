/**
 * The per-key limiter stage. Before a request goes upstream it needs: its turn to plan (one request
 * of a key plans at a time, the turns going round-robin across the key's clients, so a client that
 * fired a thousand queries cannot push a light client's one behind all of them); a reservation from
 * the budget store (the plan's windows and the upstream's last word); a connection slot (a fair
 * share of the pool); and, right before dispatch, no 429 pause in force for the key (here or on
 * another replica). A 429 pauses the key until Retry-After and the request is tried again; one that
 * cannot get budget or a slot before its operation's `waitUntil` fails at once.
 *
 * Why not bottleneck (used before): its queue knows neither our deadlines nor a client that left,
 * it cannot be fair across clients of one key, and it yields through timers (about 5 ms a job).
 */

import type { RateWindow } from '../../../config.js';
import type { BudgetAggregates } from '../../observability/metrics.js';
import type { CancelSignal } from '../../shared/cancel.js';
import { rateLimited, unavailable } from '../errors.js';
import type { Stage, UpstreamCall } from '../pipeline.js';
import type { UpstreamResponse } from '../response.js';
import type { BudgetStore, Quota } from './budget.js';
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
  /** Connection slots: the pool, and each key's share of it. */
  readonly slots: Slots;
  /** Requests one client may have waiting for its turn to plan, per key (default 100). */
  readonly maxQueuedPerClient?: number;
  /** Longest Retry-After or X-RateLimit-Reset believed (PETSTORE_MAX_RETRY_AFTER). */
  readonly maxRetryAfterMs: number;
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
  | { readonly type: 'rejected'; readonly reason: 'budget' | 'queue' }
  | { readonly type: 'upstream429'; readonly pauseMs: number }
  | { readonly type: 'sentDuringPause' }
  | { readonly type: 'clamped'; readonly keyId: string; readonly header: 'retry-after' | 'x-ratelimit-reset' };

/** How often a request blocked by the upstream's gate asks again (another replica's answer may open it). */
const GATE_POLL_MS = 100;

export function createLimiter(options: LimiterOptions): Limiter {
  const now = options.now ?? Date.now;
  const maxRetries = options.maxRetries ?? 3;
  // Per-key memos; client keys are unbounded, so the oldest entry goes past this.
  const memoSize = options.maxKeys ?? 10_000;
  const quotas = new Map<string, Quota>();
  const warned = new Set<string>();
  /** The latest pause this process recorded per key: a send while one is in force is counted (it must never happen). */
  const localPauses = new Map<string, number>();

  /** When each request of a key now in flight upstream (from this process) was sent. */
  const sending = new Map<string, Set<{ readonly at: number }>>();
  /** When the upstream last answered a request of the key (from this process). */
  const lastAnswer = new Map<string, number>();
  /** The first window's log as the key's latest reservation left it: what `describe` tells. */
  const usage = new Map<string, { readonly used: number; readonly freeAt: number; readonly at: number }>();
  /** Requests waiting for their turn, budget or a slot: a number read at scrape time, not an event per request. */
  let waiting = 0;
  /** Turns to plan: one request of a key at a time, round-robin across its clients. */
  const turns = createSlots({
    total: Number.POSITIVE_INFINITY,
    perKey: 1,
    maxQueuedPerClient: options.maxQueuedPerClient ?? 100,
    now,
  });

  /** Waits for a reservation; returns its sequence number. */
  async function reserve(call: UpstreamCall): Promise<number> {
    // Past its operation's wait, a request may still go if it needs no wait (a later page of a walk).
    // The first reservation asks at the very instant the deadline was read: a clock that ticked
    // between two reads made "no wait" a millisecond's wait past the deadline, refused.
    const waitingSince = now();
    const deadline = Math.max(call.operation.waitUntil, waitingSince);
    for (let asked = waitingSince; ; asked = now()) {
      const reservation = await options.store.reserve(call.keyId, options.windows, asked, deadline);
      const start = now();
      if (reservation.ok) {
        if (usage.size >= memoSize && !usage.has(call.keyId)) usage.delete(usage.keys().next().value as string);
        usage.set(call.keyId, { used: reservation.used, freeAt: reservation.freeAt, at: start });
        if (reservation.at <= start) return reservation.seq;
        options.onEvent?.({ type: 'throttled', waitMs: reservation.at - start });
        try {
          await sleep(reservation.at - start, call.signal);
        } catch (error) {
          await options.store.release(call.keyId, reservation.seq);
          throw error;
        }
        return reservation.seq;
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
        await sleep(Math.min(GATE_POLL_MS, deadline - start), call.signal);
        continue;
      }
      if (reservation.retryAt > deadline) {
        options.onEvent?.({ type: 'rejected', reason: 'budget' });
        throw rateLimited((reservation.retryAt - start) / 1000);
      }
      await sleep(Math.min(GATE_POLL_MS, Math.max(1, reservation.retryAt - start)), call.signal);
    }
  }

  /** Told by the slots when a wait for a turn or a connection is refused (queue full or deadline). */
  const refusedInQueue = (): void => options.onEvent?.({ type: 'rejected', reason: 'queue' });

  function acquire(slots: Slots, call: UpstreamCall): Promise<() => void> {
    const { clientId, waitUntil } = call.operation;
    return slots.acquire(call.keyId, clientId, Math.max(waitUntil, now()), call.signal, refusedInQueue);
  }

  /** Records what the answer says of the key's budget, and remembers it for `extensions.rateLimit`. */
  async function observe(call: UpstreamCall, seq: number, response: UpstreamResponse): Promise<void> {
    const at = now();
    if (lastAnswer.size >= memoSize && !lastAnswer.has(call.keyId)) {
      lastAnswer.delete(lastAnswer.keys().next().value as string);
    }
    lastAnswer.set(call.keyId, at);
    const headers = readRateHeaders(response, at, options.maxRetryAfterMs);
    if (headers.clamped) warnClamped(call.keyId, 'x-ratelimit-reset');
    const quota = await options.store.observe(call.keyId, { seq, ...headers }, at);
    if (quota.resetAt === 0) return;
    if (quotas.size >= memoSize && !quotas.has(call.keyId)) quotas.delete(quotas.keys().next().value as string);
    quotas.set(call.keyId, quota);
  }

  function warnClamped(keyId: string, header: 'retry-after' | 'x-ratelimit-reset'): void {
    const id = `${keyId} ${header}`;
    if (warned.has(id)) return;
    if (warned.size >= memoSize) warned.clear();
    warned.add(id);
    options.onEvent?.({ type: 'clamped', keyId, header });
  }

  /** One send through budget, slot and pause check; a 429 pauses the key and tries again. */
  async function run(call: UpstreamCall, next: (call: UpstreamCall) => Promise<UpstreamResponse>) {
    for (let retry = 0; ; ) {
      waiting++;
      const waitingSince = call.trace === undefined ? 0 : performance.now();
      let release: () => void;
      let seq: number;
      try {
        // The key's turn to plan is held until the planned time comes, so the next client in turn
        // plans right after: planned requests never pile up ahead of a light client.
        const endTurn = await acquire(turns, call);
        try {
          seq = await reserve(call);
        } finally {
          endTurn();
        }
        try {
          release = await acquire(options.slots, call);
        } catch (error) {
          await options.store.release(call.keyId, seq);
          throw error;
        }
      } finally {
        waiting--;
        call.trace?.waited(performance.now() - waitingSince);
      }

      let response: UpstreamResponse;
      try {
        // Right before dispatch: a 429 seen meanwhile (here or by another replica) stops this send too.
        const pausedUntil = await options.store.pausedUntil(call.keyId);
        if (pausedUntil > now()) {
          options.onEvent?.({ type: 'heldBack' });
          await options.store.release(call.keyId, seq);
          release();
          if (pausedUntil > call.operation.waitUntil) throw rateLimited((pausedUntil - now()) / 1000);
          continue;
        }
        if ((localPauses.get(call.keyId) ?? 0) > now()) options.onEvent?.({ type: 'sentDuringPause' });
        const sent = { at: now() };
        const sends = sending.get(call.keyId) ?? new Set();
        sending.set(call.keyId, sends.add(sent));
        try {
          // A try after a 429's pause gets a timeout of its own.
          response = await next(retry === 0 ? call : { ...call, firstAttempt: {} });
        } finally {
          sends.delete(sent);
          if (sends.size === 0) sending.delete(call.keyId);
        }
      } catch (error) {
        release();
        await options.store.release(call.keyId, seq);
        throw error;
      }
      release();
      await observe(call, seq, response);
      if (response.status !== 429) return response;

      // RFC 6585 section 4 / RFC 9110 section 10.2.3; absent or unreadable: exponential backoff with jitter.
      const retryAfter = readRetryAfter(response, now(), options.maxRetryAfterMs);
      if (retryAfter?.clamped) warnClamped(call.keyId, 'retry-after');
      const pauseMs = retryAfter?.ms ?? Math.min(60_000, 1_000 * 2 ** retry) * (1 + Math.random() / 2);
      options.onEvent?.({ type: 'upstream429', pauseMs });
      call.trace?.paused(pauseMs);
      const until = now() + pauseMs;
      localPauses.set(call.keyId, Math.max(localPauses.get(call.keyId) ?? 0, until));
      if (localPauses.size > memoSize) forgetPastPauses(localPauses, now());
      await options.store.pause(call.keyId, until, seq);
      // A write the upstream refused with 429 was not processed (RFC 6585): it may be sent again.
      if (retry >= maxRetries || until > call.operation.waitUntil) throw rateLimited(pauseMs / 1000);
      retry++;
      options.onEvent?.({ type: 'heldBack' });
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
      return { keys: options.store.size ?? quotas.size, paused: localPauses.size, lowestRemaining: lowest, waiting };
    },
    async close() {
      await options.store.close();
    },
  };
}

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
