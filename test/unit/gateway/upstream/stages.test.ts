/**
 * The REST client's stages, each on its own, with a plain function as the next stage: what each
 * adds to a call is decided here, without a server; how they behave together against real
 * upstreams is in test/integration/.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import type { CancelSignal } from '../../../../src/gateway/shared/cancel.js';
import { MemoryBudgetStore } from '../../../../src/gateway/upstream/limits/budget.js';
import { createLimiter, type LimiterEvent } from '../../../../src/gateway/upstream/limits/limiter.js';
import { readRateHeaders, readRetryAfter } from '../../../../src/gateway/upstream/limits/rate-headers.js';
import { createSlots } from '../../../../src/gateway/upstream/limits/slots.js';
import { createOperation } from '../../../../src/gateway/upstream/operation.js';
import { pipeline, type Send, type UpstreamCall } from '../../../../src/gateway/upstream/pipeline.js';
import type { UpstreamResponse } from '../../../../src/gateway/upstream/response.js';
import { scrubSecret } from '../../../../src/gateway/upstream/scrub.js';
import { createResponseSharing } from '../../../../src/gateway/upstream/sharing/sharing.js';
import { operationBudget } from '../../../../src/gateway/upstream/stages/operation-budget.js';
import { resendOnReset } from '../../../../src/gateway/upstream/stages/resend.js';
import { traceUpstream } from '../../../../src/gateway/upstream/stages/span.js';
import { memoryTracer } from '../../../helpers/tracing.js';
import { upstreamCall } from '../../../helpers/upstream-call.js';

const OK: UpstreamResponse = { status: 200, headers: {}, body: '[]' };

const call = upstreamCall;

const reset = () => Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });

describe('pipeline', () => {
  it('runs the stages in order, each around the next', async () => {
    const seen: string[] = [];
    const stage = (name: string) => (next: Send) => async (c: UpstreamCall) => {
      seen.push(`${name} in`);
      const response = await next(c);
      seen.push(`${name} out`);
      return response;
    };
    await pipeline([stage('a'), stage('b')], async () => {
      seen.push('send');
      return OK;
    })(call());
    expect(seen).toEqual(['a in', 'b in', 'send', 'b out', 'a out']);
  });
});

describe('resendOnReset', () => {
  it('sends a GET once more after a reset, sharing the first attempt', async () => {
    const attempts: UpstreamCall[] = [];
    const send = resendOnReset(async (c) => {
      attempts.push(c);
      if (attempts.length === 1) throw reset();
      return OK;
    });
    expect(await send(call())).toBe(OK);
    expect(attempts).toHaveLength(2);
    expect(attempts[0]?.firstAttempt).toBe(attempts[1]?.firstAttempt);
  });

  it('gives up after the second reset, and never resends a POST', async () => {
    let attempts = 0;
    const send = resendOnReset(async () => {
      attempts++;
      throw reset();
    });
    await expect(send(call())).rejects.toThrow('other side closed');
    expect(attempts).toBe(2);
    attempts = 0;
    await expect(send(call({ body: '{}' }))).rejects.toThrow('other side closed');
    expect(attempts).toBe(1);
  });

  it('does not resend what a client that left no longer waits for', async () => {
    let attempts = 0;
    const controller = new AbortController();
    const send = resendOnReset(async () => {
      attempts++;
      controller.abort();
      throw reset();
    });
    await expect(send(call({ signal: controller.signal }))).rejects.toThrow();
    expect(attempts).toBe(1);
  });
});

describe('operationBudget', () => {
  it('draws each request, refunds one that never went out, and refuses past the share', async () => {
    const operation = createOperation({
      logger: createLogger('silent'),
      maxWaitMs: 1_000,
      timeoutMs: 1_000,
      maxRequests: 2,
    });
    const sent = operationBudget(async (c) => {
      c.dispatched = true;
      return OK;
    });
    const refused = operationBudget(async () => {
      throw new Error('no budget in time');
    });
    await sent(call({ operation }));
    await expect(refused(call({ operation }))).rejects.toThrow('no budget in time');
    expect(operation.charged).toBe(1);
    await sent(call({ operation }));
    await expect(sent(call({ operation }))).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      maxRequests: 2,
      spent: 2,
    });
  });
});

describe('sharing', () => {
  it('joins identical GETs of one key, never of two keys', async () => {
    let sends = 0;
    const send = createResponseSharing({ ttlMs: 0 }).stage(async () => {
      sends++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return OK;
    });
    await Promise.all([send(call()), send(call()), send(call({ keyId: 'other' }))]);
    expect(sends).toBe(2);
  });

  it('cancels a shared GET only when every operation waiting for it has gone', async () => {
    let upstream: CancelSignal | undefined;
    const send = createResponseSharing({ ttlMs: 0 }).stage(async (c) => {
      upstream = c.signal;
      return new Promise<UpstreamResponse>((resolve) => setTimeout(() => resolve(OK), 50));
    });
    const first = new AbortController();
    const second = new AbortController();
    const a = send(call({ signal: first.signal })).catch((error: unknown) => error);
    const b = send(call({ signal: second.signal }));
    first.abort(new Error('first client left'));
    expect(await a).toMatchObject({ message: 'first client left' });
    expect(upstream?.aborted).toBe(false);
    expect(await b).toBe(OK);
    const c = send(call({ signal: first.signal })).catch((error: unknown) => error);
    expect(await c).toMatchObject({ message: 'first client left' });
  });

  it('drops the key cached answers when the key writes', async () => {
    let sends = 0;
    const sharing = createResponseSharing({ ttlMs: 60_000 });
    // The store's writes are not awaited by the reader: let each settle.
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    const send = sharing.stage(async () => {
      sends++;
      return OK;
    });
    await send(call());
    await settle();
    await send(call());
    await send(call({ body: '{}' }));
    await send(call());
    expect(sends).toBe(3);
  });
});

describe('traceUpstream', () => {
  it('hands the stages below a call that carries its span, and tells the caller whether it was sent', async () => {
    const memory = memoryTracer();
    const post = call({ route: 'createPet', url: new URL('http://store.test/v1/pets'), body: '{}' });
    const seen: UpstreamCall[] = [];
    await traceUpstream(memory.tracer)(async (c) => {
      seen.push(c);
      c.dispatched = true;
      c.trace?.attempted();
      return { status: 201, headers: {}, body: '{}' };
    })(post);
    expect(seen[0]?.trace?.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    // A POST's caller decides from `dispatched` whether a failure may have created the pet.
    expect(post.dispatched).toBe(true);
    expect(memory.spans().map((span) => [span.name, span.attributes['petstore.attempts']])).toEqual([
      ['POST /v1/pets', 1],
    ]);
    await memory.close();
  });

  it('names a failure by its code, never by its message', async () => {
    const memory = memoryTracer();
    const failing = traceUpstream(memory.tracer)(async () => {
      throw Object.assign(new Error('connect to http://user:secret@store.test failed'), { code: 'ECONNREFUSED' });
    });
    await expect(failing(call({ route: 'getPet', url: new URL('http://store.test/v1/pets/42') }))).rejects.toThrow();
    const [span] = memory.spans();
    expect(span?.name).toBe('GET /v1/pets/{petId}');
    expect(span?.status.message).toBe('ECONNREFUSED');
    expect(JSON.stringify([span?.attributes, span?.events, span?.status])).not.toMatch(/secret|42/);
    await memory.close();
  });
});

describe('slots', () => {
  it('lets a key hold its share, and serves waiting clients round-robin', async () => {
    const slots = createSlots({ total: 8, perKey: 1, maxQueuedPerClient: 10 });
    const granted: string[] = [];
    const first = await slots.acquire('key', 'heavy', Date.now() + 5_000);
    const waits = [
      ...['heavy', 'heavy', 'heavy'].map((client, i) => ({ client, id: `heavy-${i}` })),
      { client: 'light', id: 'light-0' },
    ].map(({ client, id }) =>
      slots.acquire('key', client, Date.now() + 5_000).then((release) => {
        granted.push(id);
        setImmediate(release);
      }),
    );
    first();
    await Promise.all(waits);
    // The light client waited one turn of the heavy one, not all three.
    expect(granted).toEqual(['heavy-0', 'light-0', 'heavy-1', 'heavy-2']);
    await new Promise((resolve) => setImmediate(resolve));
    // An idle key no longer counts.
    expect(slots.keys).toBe(0);
  });

  it('keeps idle keys for their next request, sweeps them past a bound, and holds each to its share', async () => {
    const slots = createSlots({ total: 8, perKey: 1, maxQueuedPerClient: 10 });
    // 1,500 keys go idle (past the 1,000 kept), and some come back after the sweep.
    for (let i = 0; i < 2_500; i++) (await slots.acquire(`key-${i % 1_500}`, 'c', Date.now() + 5_000))();
    expect(slots.keys).toBe(0);
    const held = await slots.acquire('key-1', 'c', Date.now() + 5_000);
    expect(slots.keys).toBe(1);
    await expect(slots.acquire('key-1', 'c', Date.now() + 50)).rejects.toMatchObject({
      code: 'RATE_LIMITED',
    });
    held();
    expect(slots.keys).toBe(0);
    expect(slots.waiting).toBe(0);
    expect(slots.taken).toBe(0);
  });

  it('says when it refuses a wait (queue full or deadline), and not when the client leaves', async () => {
    const slots = createSlots({ total: 8, perKey: 1, maxQueuedPerClient: 1 });
    let refused = 0;
    const onRefused = () => refused++;
    const held = await slots.acquire('key', 'a', Date.now() + 5_000, undefined, onRefused);
    const late = slots.acquire('key', 'a', Date.now() + 30, undefined, onRefused);
    await expect(slots.acquire('key', 'a', Date.now() + 5_000, undefined, onRefused)).rejects.toMatchObject({
      code: 'RATE_LIMITED',
    });
    expect(refused).toBe(1);
    await expect(late).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(refused).toBe(2);
    const controller = new AbortController();
    const leaving = slots.acquire('key', 'b', Date.now() + 5_000, controller.signal, onRefused);
    controller.abort(new Error('gone'));
    await expect(leaving).rejects.toThrow('gone');
    expect(refused).toBe(2);
    held();
  });

  it('shares the pool across keys: past it, keys take turns whatever each has queued', async () => {
    const slots = createSlots({ total: 2, perKey: 2, maxQueuedPerClient: 10 });
    const granted: string[] = [];
    const held = [
      await slots.acquire('busy', 'c', Date.now() + 5_000),
      await slots.acquire('busy', 'c', Date.now() + 5_000),
    ];
    const waits = ['busy', 'busy', 'busy', 'other'].map((key, i) =>
      slots.acquire(key, 'c', Date.now() + 5_000).then((release) => {
        granted.push(`${key}-${i}`);
        setImmediate(release);
      }),
    );
    for (const release of held) release();
    await Promise.all(waits);
    expect(granted.indexOf('other-3')).toBeLessThanOrEqual(1);
    expect(slots.taken).toBeLessThanOrEqual(2);
  });

  it('refuses past a client queue bound and at the deadline with RATE_LIMITED, and on abort with its reason', async () => {
    const slots = createSlots({ total: 8, perKey: 1, maxQueuedPerClient: 1 });
    const held = await slots.acquire('key', 'a', Date.now() + 5_000);
    const queued = slots.acquire('key', 'a', Date.now() + 50);
    await expect(slots.acquire('key', 'a', Date.now() + 5_000)).rejects.toMatchObject({
      code: 'RATE_LIMITED',
    });
    await expect(queued).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    const controller = new AbortController();
    const aborted = slots.acquire('key', 'b', Date.now() + 5_000, controller.signal);
    controller.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    expect(slots.waiting).toBe(0);
    held();
    expect(slots.keys).toBe(0);
  });
});

describe('rate headers within bounds', () => {
  const now = 1_800_000_000_000;
  const response = (status: number, headers: Record<string, string>): UpstreamResponse => ({
    status,
    headers,
    body: '',
  });
  const quota = (reset: string, remaining = '3') =>
    response(200, { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': remaining, 'x-ratelimit-reset': reset });

  it.each([
    ['a Unix time', String(now / 1000 + 30), now + 30_000, false],
    ['seconds from now', '30', now + 30_000, false],
    ['a Unix time in 2286, clamped', '9999999999', now + 3_600_000, true],
    ['a Unix time in 2001: the past, nothing known', '999999999', 0, false],
    ['a Unix time in milliseconds', String(now + 1_500), now + 1_500, false],
    ['a Unix time in milliseconds, in the past: nothing known', String(now - 1_500), 0, false],
    ['a Unix time in milliseconds in 2100, clamped', String(Date.UTC(2100, 0, 1)), now + 3_600_000, true],
  ])('reads a Reset that is %s', (_label, reset, resetAt, clamped) => {
    expect(readRateHeaders(quota(reset), now, 3_600_000)).toMatchObject({ resetAt, clamped });
  });

  it('keeps the limit and caps Remaining at it; a limit under 1 says nothing', () => {
    expect(readRateHeaders(quota('30'), now, 3_600_000)).toEqual({
      limit: 60,
      remaining: 3,
      resetAt: now + 30_000,
      clamped: false,
    });
    expect(readRateHeaders(quota('30', '99'), now, 3_600_000).remaining).toBe(60);
    const one = response(200, { 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': '30' });
    expect(readRateHeaders(one, now, 3_600_000)).toMatchObject({ limit: 1, remaining: 1 });
    const noLimit = response(200, {
      'x-ratelimit-limit': '0',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '30',
    });
    expect(readRateHeaders(noLimit, now, 3_600_000).resetAt).toBe(0);
    expect(readRateHeaders(quota(' 30 ', ' 3 '), now, 3_600_000).resetAt).toBe(now + 30_000);
    expect(readRateHeaders(quota('12345678901234567'), now, 3_600_000).resetAt).toBe(0);
  });

  // Where each reading of Reset ends: seconds from now below 1e8, a Unix time in seconds below
  // 1e11, milliseconds from there; a Reset at `now` is over, one at exactly `maxMs` is not clamped.
  it.each([
    ['1e8 - 1 (seconds from now, clamped)', String(1e8 - 1), now + 3_600_000, true],
    ['1e8 (a Unix time in 1973: nothing known)', String(1e8), 0, false],
    ['1e11 - 1 (a Unix time in 5138, clamped)', String(1e11 - 1), now + 3_600_000, true],
    ['1e11 (milliseconds: 1973, nothing known)', String(1e11), 0, false],
    ['now in milliseconds (over: nothing known)', String(now), 0, false],
    ['exactly the clamp away (kept)', '3600', now + 3_600_000, false],
  ])('reads a Reset of %s', (_label, reset, resetAt, clamped) => {
    expect(readRateHeaders(quota(reset), now, 3_600_000)).toMatchObject({ resetAt, clamped });
  });

  it('says nothing for missing or unreadable headers, and reads a 429 as nothing left', () => {
    expect(readRateHeaders(response(200, {}), now, 3_600_000).resetAt).toBe(0);
    expect(readRateHeaders(quota('30', '-1'), now, 3_600_000).resetAt).toBe(0);
    expect(readRateHeaders(quota('30', '1.5'), now, 3_600_000).resetAt).toBe(0);
    const tooMany = response(429, {
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '9',
      'x-ratelimit-reset': '30',
    });
    expect(readRateHeaders(tooMany, now, 3_600_000).remaining).toBe(0);
  });

  it('clamps Retry-After as delay-seconds and as an HTTP-date', () => {
    expect(readRetryAfter(response(429, { 'retry-after': '999999999' }), now, 3_600_000)).toEqual({
      ms: 3_600_000,
      clamped: true,
    });
    const in2100 = new Date(Date.UTC(2100, 0, 1)).toUTCString();
    expect(readRetryAfter(response(429, { 'retry-after': in2100 }), now, 3_600_000)?.clamped).toBe(true);
    expect(readRetryAfter(response(429, { 'retry-after': '2' }), now, 3_600_000)).toEqual({
      ms: 2_000,
      clamped: false,
    });
    expect(readRetryAfter(response(429, {}), now, 3_600_000)).toBeUndefined();
    expect(readRetryAfter(response(429, { 'retry-after': '3600' }), now, 3_600_000)).toEqual({
      ms: 3_600_000,
      clamped: false,
    });
  });
});

describe('scrubSecret', () => {
  const key = 'sk_live_Zm9v/bar+baz';
  it.each([
    ['as is', key],
    ['upper-cased', key.toUpperCase()],
    ['percent-encoded', encodeURIComponent(key)],
    ['in base64 of "Bearer <key>"', Buffer.from(`Bearer ${key}`).toString('base64')],
    ['in base64url at another offset', Buffer.from(`ab${key}`).toString('base64url')],
  ])('cuts the key out %s', (_label, form) => {
    const scrubbed = scrubSecret(`rejected ${form} today`, key);
    expect(scrubbed).toContain('[redacted]');
    expect(scrubbed).not.toContain(form.slice(3, -3));
  });

  it('leaves other text alone', () => {
    expect(scrubSecret('nothing to see', key)).toBe('nothing to see');
  });

  // Issue 34 item 7: an upstream that echoed the first 24 characters of a 31-character key, or its
  // own copy cut one short, gave the client 24 and 30 of them.
  describe('a part of the key', () => {
    const long = 'pk_3f9a2c71e0b84d5f96c2a1b7e0d4'; // 31 characters
    it.each([
      ['its first 24 characters', long.slice(0, 24)],
      ['all but its last character', long.slice(0, -1)],
      ['8 characters from its middle, upper-cased', long.slice(10, 18).toUpperCase()],
    ])('cuts %s', (_label, part) => {
      const scrubbed = scrubSecret(`invalid key "${part}..." (see docs)`, long);
      expect(scrubbed).toBe('invalid key "[redacted]..." (see docs)');
    });

    it('keeps runs shorter than 8 characters, and the text around a cut', () => {
      expect(scrubSecret(`ref ${long.slice(3, 10)} ok`, long)).toBe(`ref ${long.slice(3, 10)} ok`);
      expect(scrubSecret(`a${long.slice(0, 9)}b${long.slice(20, 29)}c`, long)).toBe('a[redacted]b[redacted]c');
    });

    it('cuts only whole keys shorter than 12 characters', () => {
      expect(scrubSecret('the petstore answered', 'petstore-k1')).toBe('the petstore answered');
    });

    it('never lets 8 consecutive characters of the key through, wherever they sit', () => {
      fc.assert(
        fc.property(
          fc.nat(long.length - 8),
          fc.integer({ min: 8, max: 31 }),
          fc.string(),
          fc.string(),
          (from, length, before, after) => {
            const part = long.slice(from, from + length);
            const scrubbed = scrubSecret(`${before}${part}${after}`, long);
            for (let at = 0; at + 8 <= long.length; at++) expect(scrubbed).not.toContain(long.slice(at, at + 8));
          },
        ),
        { numRuns: 300 },
      );
    });
  });

  // Its plain search before the pattern must never miss what the pattern (/gi) would cut. Keys are
  // Latin-1 (they come in a header); the text may hold any character the pattern calls equal.
  it('finds every spelling of a Latin-1 key that a case-insensitive match finds', () => {
    const latin1 = fc.integer({ min: 0x20, max: 0xff }).map((code) => String.fromCharCode(code));
    /** Characters up to U+03FF equal to `c` under /i, `c` included (ÿ ~ Ÿ, µ ~ μ, k ~ K). */
    const known = new Map<string, string[]>();
    const spellings = (c: string) => {
      let found = known.get(c);
      if (found === undefined) {
        const pattern = new RegExp(`^${c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')}$`, 'i');
        found = Array.from({ length: 0x400 }, (_, code) => String.fromCharCode(code)).filter((d) => pattern.test(d));
        known.set(c, found);
      }
      return found;
    };
    fc.assert(
      fc.property(
        fc.array(latin1, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
        fc.string(),
        (chars, picks, around) => {
          const secret = chars.join('');
          const spelled = chars.map((c, i) => {
            const choices = spellings(c);
            return choices[(picks[i] as number) % choices.length] as string;
          });
          const scrubbed = scrubSecret(`${around}${spelled.join('')}${around}`, secret);
          expect(scrubbed).toContain('[redacted]');
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('limiter', () => {
  it("sends a request past its operation's wait that needs no wait, though the clock ticks between its reads", async () => {
    // A walk's later page comes past the operation's wait and may still go if it needs none. The
    // limiter read the clock once for that deadline and again for the reservation: a millisecond
    // between the two reads refused the page as RATE_LIMITED (seen once in CI, under load, in
    // budget-integrity's "slow pages"). This clock moves a millisecond at every read.
    let clock = Date.now() + 10_000;
    const windows = [{ count: 60, windowMs: 60_000 }];
    const limiter = createLimiter({
      windows,
      store: new MemoryBudgetStore({ plan: { windows, share: 1 } }),
      slots: createSlots({ total: 4, perKey: 4, maxQueuedPerClient: 4 }),
      perKey: 4,
      maxQueuedPerClient: 4,
      maxRetryAfterMs: 60_000,
      now: () => clock++,
    });
    const send = limiter.stage(async () => OK);
    await expect(send(call())).resolves.toBe(OK);
    await limiter.close();
  });

  it('counts a request refused for want of a connection slot as rejected for the queue', async () => {
    const events: LimiterEvent[] = [];
    const limiter = createLimiter({
      windows: [],
      store: new MemoryBudgetStore({ plan: { windows: [], share: 1 } }),
      slots: createSlots({ total: 1, perKey: 1, maxQueuedPerClient: 1 }),
      perKey: 4,
      maxQueuedPerClient: 4,
      maxRetryAfterMs: 60_000,
      now: Date.now,
      onEvent: (event) => events.push(event),
    });
    let answer: (response: UpstreamResponse) => void = () => {};
    const send = limiter.stage(() => new Promise<UpstreamResponse>((resolve) => (answer = resolve)));
    const first = send(call());
    await new Promise((resolve) => setImmediate(resolve));
    // The one slot is held, so the next request waits for it, past its operation's wait of 30 ms.
    const operation = createOperation({ logger: createLogger('silent'), maxWaitMs: 30, timeoutMs: 1_000 });
    await expect(send(call({ operation }))).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(events).toContainEqual({ type: 'rejected', reason: 'queue' });
    expect(limiter.stats().waiting).toBe(0);
    answer(OK);
    await expect(first).resolves.toBe(OK);
    await limiter.close();
  });
});
