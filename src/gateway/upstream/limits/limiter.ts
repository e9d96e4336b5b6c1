/**
 * The per-key limiter stage (docs/architecture.md, "The key's budget"): one model, in stages.
 *
 * 1. **turn** (key-queue.ts): a request goes at once when nothing of its key waits and a connection
 *    of the key's share is free; otherwise it waits as a job of the key's bottleneck limiter, the
 *    clients of a shared key taking turns, until the store's word lets it go;
 * 2. **reserve** (budget.ts, model.ts): the store plans it now, or says why not and until when (a
 *    429's pause, a full window, the upstream's spent Remaining, an answer it must wait for);
 * 3. **send** on a connection of the pool (slots.ts), the next stage's attempt;
 * 4. **record** the answer in the store that planned it: the upstream's word, a 429's pause;
 * 5. **retry** after a 429 whose pause fits the operation's wait: once on any plan, further ones
 *    drawn from the operation's share.
 *
 * The store owns every fact it decides by; this module keeps only what is its own: the requests it
 * has out (to tell a silent upstream from a spent budget) and, for `extensions.rateLimit`, the last
 * view the store gave of each key.
 */

import type { RateWindow } from '../../../config.js';
import type { BudgetAggregates } from '../../observability/metrics.js';
import { untilAborted } from '../../shared/cancel.js';
import { rateLimited, unavailable } from '../errors.js';
import { canCharge, charge, type Operation, refund } from '../operation.js';
import { isWrite, type Stage, type UpstreamCall } from '../pipeline.js';
import type { UpstreamResponse } from '../response.js';
import { cameAfterHeaders, isTimeout } from '../stages/attempt.js';
import type { BudgetStore } from './budget.js';
import { type Admission, type Asked, createKeyQueues, type KeyQueues, type Refusal } from './key-queue.js';
import { BACKOFF_MS, type BudgetView, NO_ANSWER } from './model.js';
import { readRateHeaders, readRetryAfter } from './rate-headers.js';
import type { Slots } from './slots.js';

export type { BudgetView } from './model.js';

export interface Limiter {
  readonly stage: Stage;
  /** The key's budget in its tightest window as the store last said (undefined: nothing known yet). */
  describe(keyId: string): BudgetView | undefined;
  /** Aggregates for metrics: never per key. */
  stats(): BudgetAggregates;
  close(): Promise<void>;
}

export interface LimiterOptions {
  /** The budget windows; empty when client-side throttling is off (a 429 is still honoured). */
  readonly windows: readonly RateWindow[];
  readonly store: BudgetStore;
  /** Connection slots of the pool (round-robin across keys when short). */
  readonly slots: Slots;
  /** Requests of one key in flight at once from this process: its share of the pool. */
  readonly perKey: number;
  /** Requests one client may have waiting per key. */
  readonly maxQueuedPerClient: number;
  /** Longest Retry-After or X-RateLimit-Reset believed (PETSTORE_MAX_RETRY_AFTER). */
  readonly maxRetryAfterMs: number;
  readonly now: () => number;
  /** The backoff's jitter (injected so a simulation replays). */
  readonly random?: () => number;
  /** Keys whose last view is remembered for `extensions.rateLimit` (default 10,000). */
  readonly maxKeys?: number;
  /** Retries after a 429 (default 3). */
  readonly maxRetries?: number;
  readonly onEvent?: (event: LimiterEvent) => void;
}

export type LimiterEvent =
  | { readonly type: 'throttled' }
  | { readonly type: 'heldBack' }
  | { readonly type: 'rejected'; readonly reason: 'budget' | 'queue' }
  | { readonly type: 'upstream429'; readonly pauseMs: number }
  | { readonly type: 'clamped'; readonly keyId: string; readonly header: 'retry-after' | 'x-ratelimit-reset' }
  | { readonly type: 'bottleneckError'; readonly error: unknown };

/** A request planned by the store: its sequence number there, which store planned it, and when. */
interface Planned {
  readonly seq: number;
  readonly epoch: number;
  readonly at: number;
  readonly releasePool: () => void;
}

export function createLimiter(options: LimiterOptions): Limiter {
  const { now, store } = options;
  const random = options.random ?? Math.random;
  const maxRetries = options.maxRetries ?? 3;
  const memoSize = options.maxKeys ?? 10_000;
  /** The last view the store gave of each key, and when: what `describe` tells. */
  const views = new Map<string, { readonly view: BudgetView; readonly at: number }>();
  /**
   * How many of this process's requests are out for a key (a count: two sent in one millisecond are
   * two) and since when some have been, without a moment with none; when the key was last answered,
   * and when one of its requests last ended with no answer (a time-out, a reset).
   */
  const out = new Map<string, { n: number; since: number }>();
  const answered = new Map<string, number>();
  const unanswered = new Map<string, number>();
  const warned = new Set<string>();

  const queues: KeyQueues = createKeyQueues({
    perKey: options.perKey,
    window: options.windows[0],
    maxQueuedPerClient: options.maxQueuedPerClient,
    now,
    refuse,
    onError: (error) => options.onEvent?.({ type: 'bottleneckError', error }),
  });
  // Another replica's answers change a key's room as this one's do.
  store.watch?.((keyId) => queues.changed(keyId));

  function remember<V>(map: Map<string, V>, keyId: string, value: V): void {
    if (map.size >= memoSize && !map.has(keyId)) map.delete(map.keys().next().value as string);
    map.set(keyId, value);
  }

  /**
   * A waiting request's refusal. The budget held it when the store's last word was a full window,
   * the upstream's spent Remaining or a 429's pause: RATE_LIMITED. Otherwise, one that waited while
   * the upstream answered nothing for the key, though it had requests out or let one time out
   * meanwhile, or during the pause a request with no answer began, was held by a silent upstream:
   * UNAVAILABLE (whatever the store says by then: under load a pause may have ended, and the room
   * been woken, between the silence and the refusal).
   */
  function refuse({ keyId, reason, room, since }: Refusal): Error {
    if (reason === 'queue') {
      options.onEvent?.({ type: 'rejected', reason: 'queue' });
      return rateLimited(1, 'too many requests are waiting for this API key; retry shortly');
    }
    const wait = room?.wait;
    const budget = wait === 'window' || wait === 'gate' || (wait === 'paused' && !endedUnanswered(keyId));
    if (!budget && (wait === 'paused' || silent(keyId, since))) {
      return unavailable('the Pet Store has not answered in time');
    }
    options.onEvent?.({ type: 'rejected', reason: 'budget' });
    const at = now();
    return rateLimited(room !== undefined && room.until > at ? (room.until - at) / 1000 : 1);
  }

  /**
   * The upstream was silent through a wait that began at `since` when it answered nothing since and
   * either a request was out all along, or one ended with no answer meanwhile. One sent during the
   * wait (the first a freed window let go, just before the deadline) says nothing yet: the wait was
   * the budget's.
   */
  function silent(keyId: string, since: number): boolean {
    if ((answered.get(keyId) ?? 0) >= since) return false;
    return (out.get(keyId)?.since ?? Number.POSITIVE_INFINITY) <= since || (unanswered.get(keyId) ?? 0) >= since;
  }

  function endedUnanswered(keyId: string): boolean {
    return (unanswered.get(keyId) ?? Number.NEGATIVE_INFINITY) > (answered.get(keyId) ?? Number.NEGATIVE_INFINITY);
  }

  /**
   * Stage 2: asks the store to plan the request now, holding a connection of the pool while it does.
   * A store that has not answered by the time the request must be answered (a stalled Redis takes up
   * to its command time-out) fails it: what it plans later is given back. (A store's failure is
   * never an error here: the shared store falls back to its local share.)
   */
  async function ask(call: UpstreamCall): Promise<Asked<Planned>> {
    const { clientId, waitUntil } = call.operation;
    const refusedBySlots = () => options.onEvent?.({ type: 'rejected', reason: 'queue' });
    const until = Math.max(waitUntil, now());
    const releasePool = await options.slots.acquire(call.keyId, clientId, until, call.signal, refusedBySlots);
    try {
      const at = now();
      const reservation = await byDeadline(store.reserve(call.keyId, at), call.operation.answerBy, (late) => {
        if (late.ok) giveBack(call.keyId, { seq: late.seq, epoch: late.epoch, at, releasePool: () => {} });
      });
      if (reservation === undefined) throw unavailable('the rate-limit store did not answer in time');
      if (reservation.ok) {
        const value: Planned = { seq: reservation.seq, epoch: reservation.epoch, at, releasePool };
        return { ok: true as const, value, room: reservation.room };
      }
      releasePool();
      if (reservation.room.wait === 'paused') options.onEvent?.({ type: 'heldBack' });
      return { ok: false as const, room: reservation.room };
    } catch (error) {
      releasePool();
      throw error;
    }
  }

  /** A reservation whose request will not be sent: its pool slot and its place in the plan's windows are given back. */
  function giveBack(keyId: string, planned: Planned): void {
    planned.releasePool();
    void store
      .release(keyId, planned.seq, now(), planned.epoch, planned.at)
      .then((room) => queues.changed(keyId, room))
      .catch(() => undefined);
  }

  /** Stage 1: the request's turn and the store's yes (a request that needs no wait may go past its deadline). */
  function turn(call: UpstreamCall): Promise<Admission<Planned>> {
    const deadline = Math.max(call.operation.waitUntil, now());
    const waiter = { keyId: call.keyId, clientId: call.operation.clientId, deadline, signal: call.signal };
    return queues.admit(
      waiter,
      () => ask(call),
      (planned) => giveBack(call.keyId, planned),
    );
  }

  /** Stage 3: the attempt, with the request counted as out for the key while it is. */
  async function send(call: UpstreamCall, next: (call: UpstreamCall) => Promise<UpstreamResponse>) {
    const counted = out.get(call.keyId);
    if (counted === undefined) out.set(call.keyId, { n: 1, since: now() });
    else counted.n++;
    try {
      return await next(call);
    } catch (error) {
      remember(unanswered, call.keyId, now());
      throw error;
    } finally {
      const counted = out.get(call.keyId);
      if (counted !== undefined && --counted.n <= 0) out.delete(call.keyId);
    }
  }

  /** Stage 4: what the answer says of the key, on the store that planned the request. */
  async function record(call: UpstreamCall, planned: Planned, response: UpstreamResponse) {
    const at = now();
    remember(answered, call.keyId, at);
    if (response.status === 401 || response.status === 403) {
      // A key the upstream refused has no budget to keep (and nothing to show in extensions.rateLimit).
      await store.forget(call.keyId);
      views.delete(call.keyId);
      return { pauseMs: 0, room: undefined };
    }
    const word = readRateHeaders(response, at, options.maxRetryAfterMs);
    if (word.clamped) warnClamped(call.keyId, 'x-ratelimit-reset');
    const retryAfter = response.status === 429 ? readRetryAfter(response, at, options.maxRetryAfterMs) : undefined;
    if (retryAfter?.clamped) warnClamped(call.keyId, 'retry-after');
    const said = { status: response.status, word, retryAfterMs: retryAfter?.ms, jitter: random() };
    const recorded = await store.answer(call.keyId, planned.seq, said, at, planned.epoch, queues.waiting(call.keyId));
    if (recorded.view !== undefined) remember(views, call.keyId, { view: recorded.view, at });
    return recorded;
  }

  function warnClamped(keyId: string, header: 'retry-after' | 'x-ratelimit-reset'): void {
    const id = `${keyId} ${header}`;
    if (warned.has(id)) return;
    if (warned.size >= memoSize) warned.clear();
    warned.add(id);
    options.onEvent?.({ type: 'clamped', keyId, header });
  }

  /** One attempt through stages 1-4: the answer, and how long a 429 paused the key (0: none). */
  async function attempt(call: UpstreamCall, next: (call: UpstreamCall) => Promise<UpstreamResponse>) {
    const waitStarted = now();
    const admitted = await turn(call);
    if (now() > waitStarted) options.onEvent?.({ type: 'throttled' });
    call.trace?.waited(now() - waitStarted);
    // Once planned, the request runs to its end whatever its client does: written, it reaches the
    // upstream and counts against the key, and its answer is the upstream's word on the key (a GET
    // cut short when its client left was counted there and seen nowhere here, and the next send could
    // meet a 429). A client that leaves is not kept waiting for it. (A POST is never cut short.)
    const detached: UpstreamCall = {
      ...call,
      signal: undefined,
      get dispatched() {
        return call.dispatched;
      },
      set dispatched(sent) {
        call.dispatched = sent;
      },
    };
    const exchange = exchangeAndRecord(detached, next, admitted);
    // A write's caller waits for its answer: what became of it is told and logged (client.ts).
    return call.signal === undefined || isWrite(call) ? exchange : untilAborted(exchange, call.signal);
  }

  async function exchangeAndRecord(
    call: UpstreamCall,
    next: (call: UpstreamCall) => Promise<UpstreamResponse>,
    admitted: Admission<Planned>,
  ) {
    const planned = admitted.value;
    let response: UpstreamResponse;
    try {
      response = await send(call, next);
    } catch (error) {
      planned.releasePool();
      // A request that went unanswered may have counted, and backs the key off; one that broke or
      // whose body alone was too slow (the upstream answered) ends; one that never left gives its
      // place in the windows back too.
      const noAnswer = call.dispatched && isTimeout(error) && !cameAfterHeaders(error);
      const said = { status: NO_ANSWER, word: NOTHING, retryAfterMs: undefined, jitter: random() };
      const ended = noAnswer
        ? store.answer(call.keyId, planned.seq, said, now(), planned.epoch).then((recorded) => recorded.room)
        : store.release(call.keyId, planned.seq, now(), planned.epoch, call.dispatched ? undefined : planned.at);
      admitted.done(await ended.catch(() => undefined));
      throw error;
    }
    planned.releasePool();
    const recording = record(call, planned, response);
    recording.then(
      (recorded) => admitted.done(recorded.room),
      () => admitted.done(),
    );
    // The answer is the caller's once it is here: a store that is slow to record it (a stalled Redis,
    // up to its command time-out) holds it no later than the operation's answer deadline. A 429's
    // pause is the store's to say, and without it there is no retry.
    const recorded = await byDeadline(recording, call.operation.answerBy);
    if (recorded !== undefined) return { response, pauseMs: recorded.pauseMs, late: false };
    const retryAfter = readRetryAfter(response, now(), options.maxRetryAfterMs)?.ms ?? BACKOFF_MS;
    return { response, pauseMs: response.status === 429 ? Math.max(BACKOFF_MS, retryAfter) : 0, late: true };
  }

  /**
   * What `work` brings, or undefined when it has not settled by `deadline` (epoch ms) or failed; what
   * it brings after the deadline goes to `late`.
   */
  function byDeadline<T>(work: Promise<T>, deadline: number, late?: (value: T) => void): Promise<T | undefined> {
    return new Promise((resolve) => {
      let over = false;
      const timer = setTimeout(
        () => {
          over = true;
          resolve(undefined);
        },
        Math.max(0, deadline - now()),
      );
      work.then(
        (value) => {
          clearTimeout(timer);
          if (over) late?.(value);
          else resolve(value);
        },
        () => {
          clearTimeout(timer);
          resolve(undefined);
        },
      );
    });
  }

  /** Stage 5: a 429 pauses the key; the request is tried again after the pause when the rules allow. */
  async function run(call: UpstreamCall, next: (call: UpstreamCall) => Promise<UpstreamResponse>) {
    let current = call;
    let charged = false;
    for (let retries = 0; ; retries++) {
      let outcome: Awaited<ReturnType<typeof attempt>>;
      try {
        outcome = await attempt(current, next);
      } catch (error) {
        // A charged retry that never reached the upstream gives its request back to the operation.
        if (charged && !current.dispatched) refund(call.operation);
        throw error;
      } finally {
        if (current !== call && current.dispatched) call.dispatched = true;
      }
      const { response, pauseMs, late } = outcome;
      if (pauseMs === 0) return response;
      options.onEvent?.({ type: 'upstream429', pauseMs });
      call.trace?.paused(pauseMs);
      // A write the upstream refused with 429 was not processed (RFC 6585): it may be sent again.
      // Without the store's word on the pause (it answered too late), no retry.
      const retry = late ? undefined : mayRetry(call.operation, retries, now() + pauseMs);
      if (retry === undefined) throw rateLimited(pauseMs / 1000);
      charged = retry;
      options.onEvent?.({ type: 'heldBack' });
      // A try after a 429's pause gets a timeout of its own.
      current = { ...call, firstAttempt: {}, dispatched: false };
    }
  }

  /**
   * Whether a request answered 429 is tried again after the pause, and if so whether the retry is
   * drawn from the operation's share: never past the operation's wait or maxRetries.
   */
  function mayRetry(operation: Operation, retries: number, pauseEnds: number): boolean | undefined {
    if (retries >= maxRetries || pauseEnds > operation.waitUntil) return undefined;
    if (canCharge(operation)) {
      charge(operation);
      return true;
    }
    // An operation may always make its first try and one retry, whatever its share (on a small plan
    // a share of 1 leaves none); past that, its share is all it may send.
    if (operation.freeRetries > 0 && operation.charged < 2) {
      operation.freeRetries--;
      return false;
    }
    return undefined;
  }

  return {
    stage: (next) => (call) => run(call, next),
    describe(keyId) {
      const memo = views.get(keyId);
      if (memo === undefined) return undefined;
      const { view } = memo;
      // A window (or the upstream's Reset, or a pause) over since: what it held has left it.
      if (view.resetAt !== undefined && view.resetAt <= now()) {
        return { limit: view.limit, remaining: view.limit, used: 0, resetAt: undefined };
      }
      return view;
    },
    stats() {
      const at = now();
      let lowest: number | undefined;
      let paused = 0;
      for (const { view } of views.values()) {
        if (view.resetAt === undefined || view.resetAt <= at) continue;
        if (lowest === undefined || view.remaining < lowest) lowest = view.remaining;
        if (view.paused) paused++;
      }
      const queued = queues.stats();
      return {
        keys: store.size ?? views.size,
        paused,
        lowestRemaining: lowest,
        waiting: queued.waiting,
        jobs: queued.jobs,
      };
    },
    async close() {
      await queues.close();
      await store.close();
    },
  };
}

/** No usable rate-limit headers (a request that brought no answer). */
const NOTHING = { limit: 0, remaining: 0, resetAt: 0 };
