/**
 * The limiter's stages (src/gateway/upstream/limits/limiter.ts) with a plain function as the
 * upstream: the 429 retry rule, which refusals are the budget's (RATE_LIMITED) and which a silent
 * upstream's (UNAVAILABLE), what is recorded on the store, and what is told. Everything runs on
 * vitest's fake timers, bottleneck's timers included, with the limiter's clock on them. Where a test
 * must say what the store answers, the store is a script of vi.fn()s; the retry rule runs on the
 * real in-process store, whose pause is the one a 429 sets.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import type { BudgetStore, Recorded, Reservation } from '../../../../src/gateway/upstream/limits/budget.js';
import { MemoryBudgetStore } from '../../../../src/gateway/upstream/limits/budget.js';
import {
  createLimiter,
  type LimiterEvent,
  type LimiterOptions,
} from '../../../../src/gateway/upstream/limits/limiter.js';
import type { BudgetView, Room, Wait } from '../../../../src/gateway/upstream/limits/model.js';
import { createSlots } from '../../../../src/gateway/upstream/limits/slots.js';
import { createOperation } from '../../../../src/gateway/upstream/operation.js';
import type { CallTrace, Send, UpstreamCall } from '../../../../src/gateway/upstream/pipeline.js';
import type { UpstreamResponse } from '../../../../src/gateway/upstream/response.js';
import { watch } from '../../../helpers/until.js';
import { upstreamCall } from '../../../helpers/upstream-call.js';

const T = Date.UTC(2026, 0, 5);
beforeEach(() => {
  vi.useFakeTimers({ now: T });
});
afterEach(() => {
  vi.useRealTimers();
});

const OK: UpstreamResponse = { status: 200, headers: {}, body: '[]' };
const answer = (status: number, headers: Record<string, string> = {}): UpstreamResponse => ({
  status,
  headers,
  body: '',
});
const tooMany = (retryAfter?: string) => answer(429, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
const timedOut = () => new DOMException('the upstream did not answer in time', 'TimeoutError');
const reset = () => Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });

const operation = (maxWaitMs = 5_000, maxRequests?: number) =>
  createOperation({ logger: createLogger('silent'), maxWaitMs, timeoutMs: 1_000, maxRequests });
const get = (overrides: Partial<UpstreamCall> = {}) => upstreamCall({ operation: operation(), ...overrides });

const flush = () => vi.advanceTimersByTimeAsync(0);

function deferred<T>() {
  let resolve: (value: T) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/** What a request meets before it is handed to a connection: a failure, or an answer from a stage below. */
const unsent = (outcome: Error | UpstreamResponse) => ({ unsent: outcome });
type Step = UpstreamResponse | Error | Promise<UpstreamResponse> | ReturnType<typeof unsent>;

/** An upstream that meets each request with the next step (the last one again once they run out). */
function upstream(...steps: Step[]) {
  const calls: UpstreamCall[] = [];
  /** When each request came, in ms from T. */
  const times: number[] = [];
  const send: Send = async (call) => {
    calls.push(call);
    times.push(Date.now() - T);
    const step = steps[Math.min(calls.length, steps.length) - 1];
    if (step !== undefined && 'unsent' in step) {
      if (step.unsent instanceof Error) throw step.unsent;
      return step.unsent;
    }
    call.dispatched = true;
    if (step instanceof Error || step instanceof DOMException) throw step;
    return step as UpstreamResponse | Promise<UpstreamResponse>;
  };
  return { send, calls, times };
}

const OPEN: Room = { free: 100, until: 0, wait: undefined };
const held = (wait: Wait, until: number): Room => ({ free: 0, until, wait });

/** A store that says what each test makes it say: by default it plans every request, and records answers with no pause. */
function scriptedStore() {
  let seq = 0;
  let onChange: (keyId: string) => void = () => {};
  const store = {
    epoch: 0,
    size: undefined as number | undefined,
    reserve: vi.fn(
      async (_keyId: string, _now: number): Promise<Reservation> => ({
        ok: true,
        seq: ++seq,
        room: OPEN,
        epoch: 0,
      }),
    ),
    answer: vi.fn(
      async (..._args: Parameters<BudgetStore['answer']>): Promise<Recorded> => ({
        pauseMs: 0,
        room: OPEN,
        view: undefined,
      }),
    ),
    release: vi.fn(async (..._args: Parameters<BudgetStore['release']>): Promise<Room> => OPEN),
    forget: vi.fn(async (_keyId: string) => undefined),
    close: vi.fn(async () => undefined),
    watch(listener: (keyId: string) => void) {
      onChange = listener;
    },
    /** Another replica recorded an answer of the key. */
    changed: (keyId: string) => onChange(keyId),
  };
  return store satisfies BudgetStore;
}

function limiterOf(options: Partial<LimiterOptions> = {}) {
  const events: LimiterEvent[] = [];
  const slots = options.slots ?? createSlots({ total: 8, perKey: 8, maxQueuedPerClient: 8, now: () => Date.now() });
  const limiter = createLimiter({
    windows: [],
    store: new MemoryBudgetStore({ plan: { windows: [], share: 1 } }),
    perKey: 4,
    maxQueuedPerClient: 4,
    maxRetryAfterMs: 60_000,
    now: () => Date.now(),
    random: () => 0,
    onEvent: (event) => events.push(event),
    ...options,
    slots,
  });
  return { limiter, events, slots };
}

function traced() {
  const seen: string[] = [];
  const trace: CallTrace = {
    headers: {},
    attempted: () => {},
    waited: (ms) => seen.push(`waited ${ms}`),
    paused: (ms) => seen.push(`paused ${ms}`),
    resent: () => {},
  };
  return { seen, trace };
}

const rateLimited = (seconds: number) => ({
  code: 'RATE_LIMITED',
  retryAfterSeconds: seconds,
  message: `the Pet Store rate limit is reached; retry after ${seconds} s`,
});
const SILENT = { code: 'UNAVAILABLE', message: 'the Pet Store has not answered in time' };

describe('the limiter after a 429', () => {
  it('tries once more when the pause ends, drawing the retry from the operation, with a timeout of its own', async () => {
    const { limiter, events } = limiterOf();
    const up = upstream(tooMany('2'), OK);
    const { seen, trace } = traced();
    const op = operation(5_000);
    const firstAttempt = { sentAt: T };
    const result = watch(limiter.stage(up.send)(get({ operation: op, trace, firstAttempt })));
    await vi.advanceTimersByTimeAsync(1_999);
    expect(up.times).toEqual([0]);
    await vi.advanceTimersByTimeAsync(10);
    expect(up.times[1]).toBeGreaterThanOrEqual(2_000);
    expect(result.value).toBe(OK);
    expect(up.calls[1]?.firstAttempt).not.toBe(firstAttempt);
    expect(up.calls[1]?.firstAttempt).toEqual({});
    expect(op.charged).toBe(1);
    expect(events).toEqual([
      { type: 'upstream429', pauseMs: 2_000 },
      { type: 'heldBack' },
      { type: 'heldBack' },
      { type: 'throttled' },
    ]);
    expect(seen).toEqual(['waited 0', 'paused 2000', `waited ${up.times[1]}`]);
  });

  it('retries when the pause the store names ends exactly as the wait does', async () => {
    // The store names the pause and, here, lets the retry go at once: the rule alone decides.
    const store = scriptedStore();
    store.answer.mockResolvedValueOnce({ pauseMs: 5_000, room: OPEN, view: undefined });
    const { limiter } = limiterOf({ store });
    const up = upstream(tooMany('5'), OK);
    const result = watch(limiter.stage(up.send)(get({ operation: operation(5_000) })));
    await flush();
    expect(result.value).toBe(OK);
    expect(up.calls).toHaveLength(2);
  });

  it('does not retry when the pause outlasts the wait: RATE_LIMITED for the whole pause', async () => {
    const { limiter, events } = limiterOf();
    const up = upstream(tooMany('6'), OK);
    const result = watch(limiter.stage(up.send)(get({ operation: operation(5_000) })));
    await flush();
    expect(result.error).toMatchObject(rateLimited(6));
    expect(up.times).toEqual([0]);
    expect(events).toEqual([{ type: 'upstream429', pauseMs: 6_000 }]);
  });

  it.each([
    ['maxRetries retries', 1, 2],
    ['three retries by default', undefined, 4],
  ])('gives up after %s', async (_label, maxRetries, tries) => {
    const { limiter } = limiterOf(maxRetries === undefined ? {} : { maxRetries });
    const up = upstream(tooMany('1'));
    const result = watch(limiter.stage(up.send)(get({ operation: operation(60_000) })));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(result.error).toMatchObject(rateLimited(1));
    expect(up.calls).toHaveLength(tries);
  });

  it('lets an operation that has spent its share retry once for free, and never twice', async () => {
    const { limiter } = limiterOf();
    const up = upstream(tooMany('1'));
    const op = operation(60_000, 1);
    // Its first try, drawn by the operation-budget stage.
    op.charged = 1;
    const result = watch(limiter.stage(up.send)(get({ operation: op })));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(result.error).toMatchObject(rateLimited(1));
    expect(up.calls).toHaveLength(2);
    expect([op.charged, op.freeRetries]).toEqual([1, 0]);
  });

  it('gives no free retry to an operation that has sent two requests already', async () => {
    const { limiter } = limiterOf();
    const up = upstream(tooMany('1'));
    const op = operation(60_000, 2);
    op.charged = 2;
    const result = watch(limiter.stage(up.send)(get({ operation: op })));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(result.error).toMatchObject(rateLimited(1));
    expect(up.calls).toHaveLength(1);
  });

  it.each([
    ['a charged retry that never reached the upstream gives its request back', undefined, [tooMany('1')], true, 1],
    ['a charged retry that reached it keeps its charge', undefined, [tooMany('1')], false, 2],
    ['a free retry that never reached it leaves the charge as it was', 1, [tooMany('1')], true, 1],
    ["a first try that never reached it is not refunded here (the operation's stage does it)", undefined, [], true, 1],
  ])('%s', async (_label, maxRequests, before, neverSent, charged) => {
    const { limiter } = limiterOf();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const up = upstream(...before, neverSent ? unsent(refused) : refused);
    const op = operation(60_000, maxRequests);
    op.charged = 1;
    const result = watch(limiter.stage(up.send)(get({ operation: op })));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(result.error).toBe(refused);
    expect(op.charged).toBe(charged);
  });

  it('tells the caller whether any try reached the upstream, its retries included', async () => {
    const { limiter } = limiterOf();
    // A 429 that a stage below answered without sending it (as a cached refusal would).
    const unsentRefusal = () => unsent(tooMany('1'));
    const retried = get();
    const sentOnRetry = watch(limiter.stage(upstream(unsentRefusal(), OK).send)(retried));
    await vi.advanceTimersByTimeAsync(1_100);
    expect(sentOnRetry.value).toBe(OK);
    expect(retried.dispatched).toBe(true);

    const never = get();
    const refused = new Error('connect ECONNREFUSED');
    const neverSent = watch(limiter.stage(upstream(unsentRefusal(), unsent(refused)).send)(never));
    await vi.advanceTimersByTimeAsync(1_100);
    expect(neverSent.error).toBe(refused);
    expect(never.dispatched).toBe(false);
  });
});

describe('the limiter refusing a waiting request', () => {
  // Was a bug: the requests out were a set of send times, so two sent in one millisecond were one,
  // and when one broke the upstream looked answered-for: a silent upstream's refusal read RATE_LIMITED.
  it('still counts a request out after another sent in the same millisecond ended with no answer', async () => {
    const store = new MemoryBudgetStore({ plan: { windows: [], share: 1 } });
    let refuse = false;
    const reserve = store.reserve.bind(store);
    store.reserve = async (keyId, now) => {
      if (!refuse) return reserve(keyId, now);
      const room: Room = { free: 0, until: T + 5_000, wait: 'answer' };
      return { ok: false, room };
    };
    const limiter = createLimiter({
      windows: [],
      store,
      slots: createSlots({ total: 8, perKey: 8, maxQueuedPerClient: 8, now: () => Date.now() }),
      perKey: 4,
      maxQueuedPerClient: 4,
      maxRetryAfterMs: 60_000,
      now: () => Date.now(),
    });
    const answers: Array<{ resolve: (r: UpstreamResponse) => void; reject: (e: unknown) => void }> = [];
    const send = limiter.stage(
      (c) =>
        new Promise<UpstreamResponse>((resolve, reject) => {
          c.dispatched = true;
          answers.push({ resolve, reject });
        }),
    );
    // Two requests sent in the same millisecond; the first breaks, the second stays out unanswered.
    const first = send(upstreamCall()).catch(() => undefined);
    void send(upstreamCall()).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(answers).toHaveLength(2);
    answers[0]?.reject(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
    await first;
    await vi.advanceTimersByTimeAsync(1);
    refuse = true;
    const operation = createOperation({ logger: createLogger('silent'), maxWaitMs: 1_000, timeoutMs: 1_000 });
    const refused = send(upstreamCall({ operation })).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1_000);
    // The second request is still out and the upstream has answered nothing: a silent upstream.
    expect(await refused).toMatchObject({ code: 'UNAVAILABLE' });
  });

  /** A limiter on a scripted store, with one request of the key out and unanswered. */
  async function withOneOut() {
    const store = scriptedStore();
    const { limiter, events } = limiterOf({ store });
    const out = deferred<UpstreamResponse>();
    const send = limiter.stage(upstream(out.promise, OK).send);
    void send(get());
    await flush();
    return { store, limiter, events, send, out };
  }

  it.each([
    ['a full window', 'window'],
    ["the upstream's spent Remaining", 'gate'],
    ["a 429's pause", 'paused'],
  ] as const)(
    'refuses a wait for %s with RATE_LIMITED until it ends, though the upstream has not answered',
    async (_label, wait) => {
      const { store, events, send } = await withOneOut();
      store.reserve.mockResolvedValue({ ok: false, room: held(wait, T + 3_000) });
      const refused = watch(send(get({ operation: operation(1_000) })));
      await flush();
      expect(refused.error).toMatchObject(rateLimited(3));
      const rejected = { type: 'rejected', reason: 'budget' };
      expect(events).toEqual(wait === 'paused' ? [{ type: 'heldBack' }, rejected] : [rejected]);
    },
  );

  it('refuses a wait for an answer with UNAVAILABLE at the deadline, while the key has requests out and none answered', async () => {
    const { store, events, send } = await withOneOut();
    store.reserve.mockResolvedValue({ ok: false, room: held('answer', T + 5_000) });
    const refused = watch(send(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(999);
    expect(refused.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(refused.error).toMatchObject(SILENT);
    expect(events).toEqual([]);
  });

  // Was a bug (fair-share.test.ts failed 1 run in 10 of the suite): a full window held the wait, the
  // window freed just before the deadline and let one request go, and the refusal took that request,
  // out for a few milliseconds, for a silent upstream.
  it('refuses with RATE_LIMITED a wait whose only request out went during it, though it is unanswered yet', async () => {
    const store = scriptedStore();
    const { limiter, events } = limiterOf({ store });
    store.reserve.mockResolvedValue({ ok: false, room: held('window', T + 950) });
    const out = deferred<UpstreamResponse>();
    const up = upstream(out.promise);
    const send = limiter.stage(up.send);
    const first = watch(send(get({ operation: operation(5_000) })));
    await vi.advanceTimersByTimeAsync(1);
    const refused = watch(send(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(899);
    // The window frees (another replica's answer tells): the first request goes, and the key then
    // waits on its answer.
    store.reserve.mockResolvedValueOnce({ ok: true, seq: 1, room: OPEN, epoch: 0 });
    store.reserve.mockResolvedValue({ ok: false, room: held('answer', T + 5_900) });
    store.changed('kid');
    await flush();
    expect(up.times).toEqual([900]);
    await vi.advanceTimersByTimeAsync(101);
    expect(first.settled).toBe(false);
    expect(refused.error).toMatchObject({ code: 'RATE_LIMITED' });
    expect(events).toContainEqual({ type: 'rejected', reason: 'budget' });
  });

  it('refuses the same wait with RATE_LIMITED when nothing of the key is out or went unanswered', async () => {
    const store = scriptedStore();
    const { limiter, events } = limiterOf({ store });
    store.reserve.mockResolvedValue({ ok: false, room: held('answer', T + 5_000) });
    const refused = watch(limiter.stage(upstream(OK).send)(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refused.error).toMatchObject(rateLimited(4));
    expect(events).toEqual([{ type: 'rejected', reason: 'budget' }]);
  });

  it('takes an answer that came since the request began waiting as the upstream speaking, though another is out', async () => {
    const { store, send } = await withOneOut();
    await vi.advanceTimersByTimeAsync(1);
    await expect(send(get())).resolves.toBe(OK);
    store.reserve.mockResolvedValue({ ok: false, room: held('answer', T + 5_000) });
    const refused = watch(send(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refused.error).toMatchObject(rateLimited(4));
  });

  it.each([
    ['as the wait began: the upstream is silent', 0, SILENT],
    ['before the wait began: it says nothing of the upstream now', 1, rateLimited(4)],
  ])('counts a request that ended with no answer %s', async (_label, gap, refusal) => {
    const store = scriptedStore();
    const { limiter } = limiterOf({ store });
    const error = reset();
    const send = limiter.stage(upstream(error).send);
    await expect(send(get())).rejects.toBe(error);
    await vi.advanceTimersByTimeAsync(gap);
    store.reserve.mockResolvedValue({ ok: false, room: held('answer', T + 5_000) });
    const refused = watch(send(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refused.error).toMatchObject(refusal);
  });

  it('still counts the requests out after one of them ended with no answer', async () => {
    const store = scriptedStore();
    const { limiter } = limiterOf({ store });
    const out = deferred<UpstreamResponse>();
    const error = reset();
    const broken = deferred<UpstreamResponse>();
    const send = limiter.stage(upstream(broken.promise, out.promise).send);
    const first = watch(send(get()));
    await vi.advanceTimersByTimeAsync(1);
    void send(get());
    await vi.advanceTimersByTimeAsync(1);
    broken.reject(error);
    await vi.advanceTimersByTimeAsync(1);
    expect(first.error).toBe(error);
    store.reserve.mockResolvedValue({ ok: false, room: held('answer', T + 5_000) });
    const refused = watch(send(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refused.error).toMatchObject(SILENT);
  });

  it('refuses during a pause that followed a request with no answer with UNAVAILABLE, and with RATE_LIMITED once a 429 came since', async () => {
    const store = scriptedStore();
    const { limiter, events } = limiterOf({ store });
    const send = limiter.stage(upstream(timedOut(), tooMany()).send);
    await expect(send(get())).rejects.toMatchObject({ name: 'TimeoutError' });
    await vi.advanceTimersByTimeAsync(1);
    store.reserve.mockResolvedValueOnce({ ok: false, room: held('paused', T + 3_000) });
    await expect(send(get({ operation: operation(500) }))).rejects.toMatchObject(SILENT);
    expect(events).toEqual([{ type: 'heldBack' }]);

    // The store recorded this 429 with no pause of its own: it is returned as it came.
    await expect(send(get())).resolves.toMatchObject({ status: 429 });
    await vi.advanceTimersByTimeAsync(1);
    store.reserve.mockResolvedValueOnce({ ok: false, room: held('paused', T + 3_000) });
    await expect(send(get({ operation: operation(500) }))).rejects.toMatchObject(rateLimited(3));
  });

  it('refuses at once the request a client has no more room to queue', async () => {
    const store = scriptedStore();
    const { limiter, events } = limiterOf({ store, maxQueuedPerClient: 1 });
    store.reserve.mockResolvedValue({ ok: false, room: held('window', T + 3_000) });
    const send = limiter.stage(upstream(OK).send);
    const first = watch(send(get()));
    const second = watch(send(get()));
    await flush();
    expect(first.settled).toBe(false);
    expect(second.error).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterSeconds: 1,
      message: 'too many requests are waiting for this API key; retry shortly',
    });
    expect(events).toEqual([{ type: 'rejected', reason: 'queue' }]);
  });

  it("wakes a waiting request when another replica's answer changes the key, and gives back a plan that came after its caller left", async () => {
    const store = scriptedStore();
    const { limiter, events, slots } = limiterOf({ store });
    const up = upstream(OK);
    const send = limiter.stage(up.send);
    store.reserve.mockResolvedValueOnce({ ok: false, room: held('window', T + 3_000) });
    const woken = watch(send(get()));
    await vi.advanceTimersByTimeAsync(100);
    store.changed('kid');
    await flush();
    expect(woken.value).toBe(OK);
    expect(up.times).toEqual([100]);

    // Woken again, it asks a store that answers past its wait: refused then, with nothing known of
    // the key's room and the upstream not silent, for a second.
    events.length = 0;
    store.reserve.mockResolvedValueOnce({ ok: false, room: held('window', T + 900) });
    const late = deferred<Reservation>();
    store.reserve.mockReturnValueOnce(late.promise);
    const refused = watch(send(get({ operation: operation(1_000) })));
    await flush();
    store.changed('kid');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(refused.error).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 1 });
    expect(events).toEqual([{ type: 'rejected', reason: 'budget' }]);
    await vi.advanceTimersByTimeAsync(400);
    late.resolve({ ok: true, seq: 41, room: OPEN, epoch: 0 });
    await flush();
    // Planned after its caller was answered, never sent: its place in the windows comes back (planned at T + 100).
    expect(store.release.mock.calls).toEqual([['kid', 41, T + 1_500, 0, T + 100]]);
    expect(slots.taken).toBe(0);
    expect(up.calls).toHaveLength(1);
  });
});

describe('the limiter and its store', () => {
  it('records the status, the rate headers, the Retry-After and the jitter on the store that planned the request', async () => {
    const store = scriptedStore();
    store.reserve.mockResolvedValue({ ok: true, seq: 7, room: OPEN, epoch: 3 });
    const { limiter } = limiterOf({ store, random: () => 0.25 });
    const headers = { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '30' };
    const send = limiter.stage(
      upstream(answer(429, { ...headers, 'retry-after': '2' }), answer(200, { 'retry-after': '2' })).send,
    );
    await expect(send(get())).resolves.toMatchObject({ status: 429 });
    await expect(send(get())).resolves.toMatchObject({ status: 200 });
    const word = { limit: 10, remaining: 0, resetAt: T + 30_000, clamped: false };
    const nothing = { limit: 0, remaining: 0, resetAt: 0, clamped: false };
    expect(store.answer.mock.calls).toEqual([
      ['kid', 7, { status: 429, word, retryAfterMs: 2_000, jitter: 0.25 }, T, 3, false],
      // A Retry-After means something on a 429 only.
      ['kid', 7, { status: 200, word: nothing, retryAfterMs: undefined, jitter: 0.25 }, T, 3, false],
    ]);
  });

  it.each([
    ['timed out once written: recorded as no answer', timedOut(), true, 'answer'],
    // Never sent: its place in the windows comes back too (planned at T).
    ['timed out before it was written: given back with its place', timedOut(), false, 'release', T],
    ['broke once written: given back', reset(), true, 'release', undefined],
  ])('ends a request that %s', async (_label, error, written, ended, unsentAt?: number) => {
    const store = scriptedStore();
    const { limiter, slots } = limiterOf({ store, random: () => 0.5 });
    const send = limiter.stage(upstream(written ? error : unsent(error)).send);
    await expect(send(get())).rejects.toBe(error);
    const noAnswer = { status: 0, word: { limit: 0, remaining: 0, resetAt: 0 }, retryAfterMs: undefined, jitter: 0.5 };
    expect(store.answer.mock.calls).toEqual(ended === 'answer' ? [['kid', 1, noAnswer, T, 0]] : []);
    expect(store.release.mock.calls).toEqual(ended === 'release' ? [['kid', 1, T, 0, unsentAt]] : []);
    expect(slots.taken).toBe(0);
  });

  it("holds the key's waiting requests until the pause a time-out left has ended", async () => {
    const store = scriptedStore();
    store.answer.mockResolvedValueOnce({ pauseMs: 1_000, room: held('paused', T + 1_000), view: undefined });
    const { limiter } = limiterOf({ store, perKey: 1 });
    const out = deferred<UpstreamResponse>();
    const up = upstream(out.promise, OK);
    const send = limiter.stage(up.send);
    const first = watch(send(get()));
    const waiting = watch(send(get()));
    await flush();
    out.reject(timedOut());
    await flush();
    expect(first.error).toMatchObject({ name: 'TimeoutError' });
    expect(store.reserve).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(store.reserve).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10);
    expect(store.reserve).toHaveBeenCalledTimes(2);
    expect(waiting.value).toBe(OK);
    expect(up.times[1]).toBeGreaterThanOrEqual(1_000);
  });

  it.each([
    ['recorded', false],
    ['the store fails to record it', true],
  ])("frees the key's connection once the answer is in and %s", async (_label, fails) => {
    const store = scriptedStore();
    if (fails) store.answer.mockRejectedValue(new Error('store down'));
    const { limiter } = limiterOf({ store, perKey: 1 });
    const out = deferred<UpstreamResponse>();
    const up = upstream(out.promise, OK);
    const send = limiter.stage(up.send);
    const first = watch(send(get()));
    const second = watch(send(get()));
    await flush();
    expect(up.calls).toHaveLength(1);
    out.resolve(OK);
    await flush();
    expect([first.value, second.value]).toEqual([OK, OK]);
  });

  it('fails a request the store has not planned by its answer deadline, and gives back what it plans later', async () => {
    const store = scriptedStore();
    const late = deferred<Reservation>();
    store.reserve
      .mockReturnValueOnce(late.promise)
      .mockResolvedValueOnce({ ok: false, room: held('answer', T + 5_000) });
    const { limiter, slots } = limiterOf({ store });
    const up = upstream(OK);
    const send = limiter.stage(up.send);
    const result = watch(send(get({ operation: operation(1_000) })));
    const waiting = watch(send(get({ operation: operation(4_000) })));
    await vi.advanceTimersByTimeAsync(1_999);
    expect(result.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(result.error).toMatchObject({ code: 'UNAVAILABLE', message: 'the rate-limit store did not answer in time' });
    expect(slots.taken).toBe(0);
    late.resolve({ ok: true, seq: 5, room: OPEN, epoch: 2 });
    await flush();
    expect(store.release.mock.calls).toEqual([['kid', 5, T + 2_000, 2, T]]);
    // The room its release leaves lets the key's waiting request go, long before the store's wait ends.
    await vi.advanceTimersByTimeAsync(10);
    expect(waiting.value).toBe(OK);
    expect(up.times[0]).toBeLessThan(2_100);
  });

  it('gives nothing back for a refusal that came past the deadline', async () => {
    const store = scriptedStore();
    const late = deferred<Reservation>();
    store.reserve.mockReturnValueOnce(late.promise);
    const { limiter } = limiterOf({ store });
    const result = watch(limiter.stage(upstream(OK).send)(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(result.error).toMatchObject({ code: 'UNAVAILABLE' });
    late.resolve({ ok: false, room: held('window', T + 9_000) });
    await flush();
    expect(store.release).not.toHaveBeenCalled();
  });

  it('waits for a store that plans just before the deadline, and fails at once when the store fails', async () => {
    const store = scriptedStore();
    const slow = deferred<Reservation>();
    store.reserve.mockReturnValueOnce(slow.promise).mockRejectedValueOnce(new Error('store down'));
    const { limiter } = limiterOf({ store });
    const send = limiter.stage(upstream(OK).send);
    const result = watch(send(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(1_999);
    slow.resolve({ ok: true, seq: 1, room: OPEN, epoch: 0 });
    await flush();
    expect(result.value).toBe(OK);
    const failed = watch(send(get()));
    await flush();
    expect(failed.error).toMatchObject({ code: 'UNAVAILABLE', message: 'the rate-limit store did not answer in time' });
  });

  it.each([
    ['a 429 with a Retry-After: RATE_LIMITED for it, not retried', tooMany('3'), 3],
    ['a 429 without one: RATE_LIMITED for the backoff', tooMany(), 1],
    ['a 429 asking for no wait: RATE_LIMITED for the backoff', tooMany('0'), 1],
    ['a 200: answered', OK, undefined],
  ])('answers by the deadline when the store is slow to record %s', async (_label, response, seconds) => {
    const store = scriptedStore();
    const recorded = deferred<Recorded>();
    store.answer.mockReturnValueOnce(recorded.promise);
    const { limiter, events } = limiterOf({ store });
    const up = upstream(response, OK);
    const result = watch(limiter.stage(up.send)(get({ operation: operation(5_000) })));
    await vi.advanceTimersByTimeAsync(5_999);
    expect(result.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    if (seconds === undefined) {
      expect(result.value).toBe(OK);
      expect(events).toEqual([]);
    } else {
      expect(result.error).toMatchObject(rateLimited(seconds));
      expect(events).toEqual([{ type: 'upstream429', pauseMs: seconds * 1_000 }]);
    }
    expect(up.calls).toHaveLength(1);
    // What the store says after the deadline goes nowhere.
    recorded.resolve({ pauseMs: 3_000, room: OPEN, view: undefined });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(up.calls).toHaveLength(1);
  });

  it('does not retry a 429 the store failed to record: without its word on the pause, RATE_LIMITED for the Retry-After', async () => {
    const store = scriptedStore();
    store.answer.mockRejectedValueOnce(new Error('store down'));
    const { limiter, events } = limiterOf({ store });
    const up = upstream(tooMany('2'), OK);
    const result = watch(limiter.stage(up.send)(get({ operation: operation(5_000) })));
    await flush();
    expect(result.error).toMatchObject(rateLimited(2));
    expect(up.calls).toHaveLength(1);
    expect(events).toEqual([{ type: 'upstream429', pauseMs: 2_000 }]);
  });

  it.each([401, 403])('forgets a key the upstream refused with %i, and its view', async (status) => {
    const store = scriptedStore();
    const view: BudgetView = { limit: 10, remaining: 4, used: 6, resetAt: T + 60_000 };
    store.answer.mockResolvedValue({ pauseMs: 0, room: OPEN, view });
    const { limiter, events } = limiterOf({ store });
    const up = upstream(OK, answer(status));
    const send = limiter.stage(up.send);
    await send(get());
    expect(limiter.describe('kid')).toEqual(view);
    expect(store.forget).not.toHaveBeenCalled();
    await expect(send(get())).resolves.toMatchObject({ status });
    expect(store.forget.mock.calls).toEqual([['kid']]);
    expect(store.answer).toHaveBeenCalledTimes(1);
    expect(limiter.describe('kid')).toBeUndefined();
    expect(up.calls).toHaveLength(2);
    expect(events).toEqual([]);
  });

  it('closes its store', async () => {
    const store = scriptedStore();
    const { limiter } = limiterOf({ store });
    await limiter.close();
    expect(store.close).toHaveBeenCalledTimes(1);
  });
});

describe('the limiter on its way', () => {
  it('waits for a connection of the pool until one is free', async () => {
    const { limiter } = limiterOf({
      slots: createSlots({ total: 1, perKey: 1, maxQueuedPerClient: 8, now: () => Date.now() }),
    });
    const out = deferred<UpstreamResponse>();
    const up = upstream(out.promise, OK);
    const send = limiter.stage(up.send);
    void send(get());
    const other = watch(send(get({ keyId: 'other', operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(500);
    out.resolve(OK);
    await flush();
    expect(other.value).toBe(OK);
    expect(up.times).toEqual([0, 500]);
  });

  it('holds a request for a window that frees within its wait, and tells that it was throttled', async () => {
    const store = scriptedStore();
    store.reserve.mockResolvedValueOnce({ ok: false, room: held('window', T + 500) });
    const { limiter, events } = limiterOf({ store });
    const up = upstream(OK);
    const result = watch(limiter.stage(up.send)(get({ operation: operation(1_000) })));
    await vi.advanceTimersByTimeAsync(499);
    expect(up.times).toEqual([]);
    await vi.advanceTimersByTimeAsync(10);
    expect(result.value).toBe(OK);
    expect(up.times[0]).toBeGreaterThanOrEqual(500);
    expect(events).toEqual([{ type: 'throttled' }]);
  });

  it.each([
    ['a GET', undefined, 'the client left'],
    ['a POST', '{}', undefined],
  ])(
    "lets %s's client that leaves go as its client asks, and records the answer when it comes",
    async (_label, body, error) => {
      const store = scriptedStore();
      const { limiter } = limiterOf({ store });
      const out = deferred<UpstreamResponse>();
      const controller = new AbortController();
      const result = watch(limiter.stage(upstream(out.promise).send)(get({ body, signal: controller.signal })));
      await flush();
      controller.abort(new Error('the client left'));
      await flush();
      expect(result.settled).toBe(error !== undefined);
      if (error !== undefined) expect(result.error).toMatchObject({ message: error });
      out.resolve(OK);
      await flush();
      expect(store.answer).toHaveBeenCalledTimes(1);
      if (error === undefined) expect(result.value).toBe(OK);
    },
  );
});

describe('what the limiter tells', () => {
  const reset = (seconds: string) => ({
    'x-ratelimit-limit': '10',
    'x-ratelimit-remaining': '5',
    'x-ratelimit-reset': seconds,
  });

  it('warns once per key and header of a rate-limit time past the bound, and of a Retry-After only on a 429', async () => {
    const { limiter, events } = limiterOf({ store: scriptedStore() });
    const send = (keyId: string, response: UpstreamResponse) => limiter.stage(upstream(response).send)(get({ keyId }));
    await send('kid', answer(200, reset('3600')));
    await send('other', answer(200, reset('3600')));
    await send('kid', answer(200, reset('3600')));
    await send('kid', answer(429, { 'retry-after': '3600' }));
    await send('third', answer(200, { 'retry-after': '3600' }));
    await send('fourth', answer(200, reset('60')));
    expect(events).toEqual([
      { type: 'clamped', keyId: 'kid', header: 'x-ratelimit-reset' },
      { type: 'clamped', keyId: 'other', header: 'x-ratelimit-reset' },
      { type: 'clamped', keyId: 'kid', header: 'retry-after' },
    ]);
  });

  it('warns again of a key past maxKeys warned keys', async () => {
    const { limiter, events } = limiterOf({ store: scriptedStore(), maxKeys: 1 });
    const send = (keyId: string) => limiter.stage(upstream(answer(200, reset('3600'))).send)(get({ keyId }));
    await send('kid');
    await send('other');
    await send('kid');
    expect(events.map((event) => event.type === 'clamped' && event.keyId)).toEqual(['kid', 'other', 'kid']);
  });

  it("tells a key's budget as the store last said it, and in full from its reset on", async () => {
    const store = scriptedStore();
    const view: BudgetView = { limit: 10, remaining: 4, used: 6, resetAt: T + 1_000 };
    store.answer.mockResolvedValueOnce({ pauseMs: 0, room: OPEN, view });
    const { limiter } = limiterOf({ store });
    await limiter.stage(upstream(OK).send)(get());
    expect(limiter.describe('kid')).toEqual(view);
    expect(limiter.describe('unknown')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(999);
    expect(limiter.describe('kid')).toEqual(view);
    await vi.advanceTimersByTimeAsync(1);
    expect(limiter.describe('kid')).toEqual({ limit: 10, remaining: 10, used: 0, resetAt: undefined });
  });

  it('keeps a view with no reset as it is, and the last view when the store gives none', async () => {
    const store = scriptedStore();
    const view: BudgetView = { limit: 10, remaining: 4, used: 6, resetAt: undefined };
    store.answer.mockResolvedValueOnce({ pauseMs: 0, room: OPEN, view });
    const { limiter } = limiterOf({ store });
    const send = limiter.stage(upstream(OK).send);
    await send(get());
    await send(get());
    expect(limiter.describe('kid')).toEqual(view);
  });

  it('remembers the views of maxKeys keys: a key answered again pushes none out, a new one the first', async () => {
    const store = scriptedStore();
    store.answer.mockImplementation(async (keyId) => ({
      pauseMs: 0,
      room: OPEN,
      view: { limit: 10, remaining: keyId.length, used: 0, resetAt: T + 60_000 },
    }));
    const { limiter } = limiterOf({ store, maxKeys: 2 });
    const send = (keyId: string) => limiter.stage(upstream(OK).send)(get({ keyId }));
    const known = () => ['a', 'bb', 'ccc'].map((keyId) => limiter.describe(keyId)?.remaining);
    await send('a');
    await send('bb');
    await send('bb');
    expect(known()).toEqual([1, 2, undefined]);
    await send('ccc');
    expect(known()).toEqual([undefined, 2, 3]);

    const { limiter: roomy } = limiterOf({ store });
    await roomy.stage(upstream(OK).send)(get({ keyId: 'a' }));
    await roomy.stage(upstream(OK).send)(get({ keyId: 'bb' }));
    expect(roomy.describe('a')?.remaining).toBe(1);
  });

  it('sums up the views in force: the lowest remaining, the paused keys, and the keys the store holds', async () => {
    const store = scriptedStore();
    const views: Record<string, BudgetView> = {
      a: { limit: 10, remaining: 4, used: 6, resetAt: T + 1_000 },
      b: { limit: 10, remaining: 2, used: 8, resetAt: T + 2_000, paused: true },
      over: { limit: 10, remaining: 0, used: 10, resetAt: T },
      unknown: { limit: 10, remaining: 1, used: 9, resetAt: undefined },
    };
    store.answer.mockImplementation(async (keyId) => ({ pauseMs: 0, room: OPEN, view: views[keyId] }));
    const { limiter } = limiterOf({ store });
    for (const keyId of Object.keys(views)) await limiter.stage(upstream(OK).send)(get({ keyId }));
    expect(limiter.stats()).toEqual({ keys: 4, paused: 1, lowestRemaining: 2, waiting: 0, jobs: 0 });
    store.size = 9;
    expect(limiter.stats().keys).toBe(9);
  });
});
