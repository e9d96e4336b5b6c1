/**
 * What the gateway does after a 429 from the reference store (issue 34, item 3): one pause per key,
 * never shorter than a second when Retry-After asks for none (0, a date in the past from a clock
 * behind ours, or unreadable), doubling for 429s in a row; shared by the key's queued sends; a
 * first retry on any plan, further ones drawn from its operation's share. Windows of a second or
 * three stand in for minutes.
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { errorCodes } from '../../helpers/gql.js';
import { answer, startHostileUpstream } from '../../helpers/hostile-upstream.js';
import { type Stack, type StackOptions, startStack, TEST_KEY } from '../../helpers/start-stack.js';
import { startGateway } from '../../helpers/upstream.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(options: StackOptions): Promise<Stack> {
  stack = await startStack(options);
  return stack;
}

/** Spends the key's window at the store directly, as another client of the key would (stopping at its 429). */
async function exhaustDirectly(target: Stack, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${target.store.url}/pets?limit=1`, {
      headers: { authorization: `Bearer ${TEST_KEY}` },
    });
    await response.arrayBuffer();
    if (response.status === 429) return;
  }
}

/** Waits until the start of a window of `windowMs` (aligned to the epoch, as the store's are). */
async function alignToWindow(windowMs: number): Promise<void> {
  const into = Date.now() % windowMs;
  if (into > windowMs / 10) await new Promise((resolve) => setTimeout(resolve, windowMs - into + 5));
}

/** The gateway's requests: the store records the direct ones too, which come first here. */
const fromGateway = (target: Stack, direct: number): RequestRecord[] => target.requests.slice(direct);

describe('after a 429', () => {
  it.each([
    ['delay-seconds', 'delay-seconds'],
    ['an HTTP-date', 'http-date'],
  ] as const)(
    'answers with data after the Retry-After (%s) on a small plan whose share holds no retry',
    async (_label, format) => {
      // Issue 43: on 5/2s an operation's share is 1 (a quarter of 5); the retry after the 429 was refused.
      const target = await start({
        store: { keys: { [TEST_KEY]: { perMinute: 5, perDay: 100_000 } }, minuteMs: 2_000, retryAfter: format },
        env: { PETSTORE_RATE_LIMITS: '5/2s', PETSTORE_MAX_WAIT: '60s', PETSTORE_COALESCE: 'false' },
      });
      await alignToWindow(2_000);
      await exhaustDirectly(target, 5);
      const direct = target.requests.length;
      const started = Date.now();
      const response = await target.query('{ pets(first: 1) { nodes { id } } }');
      expect(response.body.errors).toBeUndefined();
      const sent = fromGateway(target, direct);
      // The first try met the spent window's 429, the one retry went after its Retry-After.
      expect(sent.map((record) => record.status)).toEqual([429, 200]);
      expect((sent[1]?.receivedAt as number) - (sent[0]?.receivedAt as number)).toBeGreaterThanOrEqual(900);
      expect(Date.now() - started).toBeLessThan(5_000);
    },
    20_000,
  );

  it('pauses at least a second when Retry-After is a date in the past (a clock behind ours): no burst, no ban', async () => {
    const SKEW_MS = 120_000;
    const target = await start({
      store: {
        keys: { [TEST_KEY]: { perMinute: 5, perDay: 100_000 } },
        minuteMs: 1_000,
        // The store's clock runs two minutes behind the gateway's: its Retry-After dates are past.
        now: () => Date.now() - SKEW_MS,
        retryAfter: 'http-date',
      },
      env: { PETSTORE_RATE_LIMITS: '5/1s', PETSTORE_MAX_WAIT: '6s', MAX_BUDGET_SHARE: '1', PETSTORE_COALESCE: 'false' },
    });
    await alignToWindow(1_000);
    await exhaustDirectly(target, 5);
    const direct = target.requests.length;
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => target.query(`{ pets(first: ${i + 1}) { nodes { id } } }`)),
    );
    expect(target.requests.filter((record) => record.code === 'key_banned')).toEqual([]);
    for (const code of responses.flatMap(errorCodes)) expect(code).toBe('RATE_LIMITED');
    const sent = fromGateway(target, direct);
    const refusals = sent.filter((record) => record.status === 429);
    expect(refusals.length).toBeGreaterThan(0);
    // After each 429, nothing for the key for a second (the pause), then one request first.
    for (const refusal of refusals) {
      const soon = sent.filter((r) => r.receivedAt > refusal.receivedAt && r.receivedAt < refusal.receivedAt + 990);
      expect(soon).toEqual([]);
    }
  }, 20_000);

  it.each(['0', 'soon'])(
    'pauses at least a second for Retry-After %j, and doubles the pause for a 429 in a row',
    async (value) => {
      // The reference store never says these; a hostile upstream answers every request with them,
      // and with no X-RateLimit-* (whose Reset would otherwise decide the wait).
      const upstream = await startHostileUpstream((_request, response) =>
        answer(response, 429, '{"code":"rate_limited","message":"slow down","status":429}', {
          quota: false,
          headers: { 'retry-after': value },
        }),
      );
      const gateway = await startGateway(upstream.url, {
        PETSTORE_RATE_LIMITS: '100/1m',
        PETSTORE_MAX_WAIT: '5s',
        MAX_BUDGET_SHARE: '1',
      });
      try {
        const response = await gateway.query('{ pets(first: 1) { nodes { id } } }');
        expect(errorCodes(response)).toEqual(['RATE_LIMITED']);
        const times = upstream.requests.map((request) => request.at);
        // A try at once, after 1–1.5 s, after 2–3 s more (jitter); the next would come past the 5 s wait.
        expect(times).toHaveLength(3);
        expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(995);
        expect((times[2] as number) - (times[1] as number)).toBeGreaterThanOrEqual(1_995);
      } finally {
        await gateway.close();
        await upstream.close();
      }
    },
    20_000,
  );

  it("draws every retry from the operation's share: 15 fields of share 15 send at most 15 requests", async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 60, perDay: 100_000 } }, minuteMs: 3_000 },
      env: { PETSTORE_RATE_LIMITS: '60/3s', PETSTORE_MAX_WAIT: '10s', PETSTORE_COALESCE: 'false' },
    });
    await alignToWindow(3_000);
    await exhaustDirectly(target, 60);
    const direct = target.requests.length;
    const fields = Array.from({ length: 15 }, (_, i) => `p${i}: pets(first: ${i + 1}) { nodes { id } }`).join(' ');
    const response = await target.query(`{ ${fields} }`);
    const sent = fromGateway(target, direct);
    expect(sent.length).toBeLessThanOrEqual(15);
    expect(response.body.extensions?.cost).toMatchObject({ actualUpstreamRequests: sent.length });
    expect(target.requests.filter((record) => record.code === 'key_banned')).toEqual([]);
  }, 20_000);
});
