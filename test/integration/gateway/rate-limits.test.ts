/**
 * Plan-aware rate limiting against the reference store, with windows of a second or two so the
 * behaviour of minutes runs in seconds: bursts queue instead of failing, a 429 pauses the key until
 * Retry-After, a spent day fails fast, and the store's ban is never triggered.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { SAFE_CWND } from '../../../src/gateway/upstream/limits/model.js';
import { errorCodes } from '../../helpers/gql.js';
import { type Stack, type StackOptions, startStack, TEST_KEY } from '../../helpers/start-stack.js';

const PETS = '{ pets(first: 1) { nodes { id } } }';
/**
 * The i-th of a burst: each asks for another page size, so each is its own upstream request
 * (identical GETs in flight for one key are shared, which would hide the limiter).
 */
const distinct = (i: number) => `{ pets(first: ${(i % 100) + 1}) { nodes { id } } }`;
let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(options: StackOptions): Promise<Stack> {
  stack = await startStack(options);
  return stack;
}

/** Sends `n` distinct queries at once and returns the responses. */
function burst(target: Stack, n: number) {
  return Promise.all(Array.from({ length: n }, (_, i) => target.query(distinct(i))));
}

function upstream429s(target: Stack): number {
  return target.requests.filter((record) => record.status === 429).length;
}

/** Waits until the start of a window of `windowMs` (aligned to the epoch, as the store's are). */
async function alignToWindow(windowMs: number): Promise<void> {
  const into = Date.now() % windowMs;
  if (into > windowMs / 4) await new Promise((resolve) => setTimeout(resolve, windowMs - into + 5));
}

/**
 * Uses up the key's current window directly at the store, as another client of the same key would;
 * a well-behaved one, which stops at its first 429.
 */
async function exhaustDirectly(target: Stack, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${target.store.url}/pets?limit=1`, {
      headers: { authorization: `Bearer ${TEST_KEY}` },
    });
    await response.arrayBuffer();
    if (response.status === 429) return;
  }
}

describe('rate limiting', () => {
  it('serves a burst of ten times the budget with 0 upstream 429s', async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 5, perDay: 100_000 } }, minuteMs: 1_000 },
      env: { PETSTORE_RATE_LIMITS: '5/1s', PETSTORE_MAX_WAIT: '20s' },
    });
    const responses = await burst(target, 50);
    expect(responses.flatMap(errorCodes)).toEqual([]);
    expect(target.count('listPets')).toBe(50);
    expect(upstream429s(target)).toBe(0);
    // No second of the store's saw more than its limit.
    const perWindow = new Map<number, number>();
    for (const record of target.requests) {
      const window = Math.floor(record.receivedAt / 1_000);
      perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    }
    expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(5);
  }, 30_000);

  it('does not count time spent waiting for budget against PETSTORE_TIMEOUT', async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 2, perDay: 100_000 } }, minuteMs: 1_000 },
      env: { PETSTORE_RATE_LIMITS: '2/1s', PETSTORE_MAX_WAIT: '10s', PETSTORE_TIMEOUT: '500ms' },
    });
    // The last of these waits about three seconds for budget, six times the upstream timeout.
    const responses = await burst(target, 8);
    expect(responses.flatMap(errorCodes)).toEqual([]);
    expect(upstream429s(target)).toBe(0);
  }, 20_000);

  it.each(['delay-seconds', 'http-date'] as const)(
    'after a 429 (Retry-After as %s) sends nothing for the key until Retry-After, then succeeds',
    async (retryAfter) => {
      const target = await start({
        store: { keys: { [TEST_KEY]: { perMinute: 5, perDay: 100_000 } }, minuteMs: 2_000, retryAfter },
        // Each operation may spend the whole window, so one that met the 429 has a retry left in its share.
        env: { PETSTORE_RATE_LIMITS: '5/2s', PETSTORE_MAX_WAIT: '10s', MAX_BUDGET_SHARE: '1' },
      });
      await alignToWindow(2_000);
      await exhaustDirectly(target, 5);
      const responses = await burst(target, 3);
      expect(responses.flatMap(errorCodes)).toEqual([]);

      const fromGateway = target.requests.slice(5);
      const refused = fromGateway.filter((record) => record.status === 429);
      expect(refused).toHaveLength(1);
      const windowEnd = Math.ceil((refused[0]!.receivedAt + 1) / 2_000) * 2_000;
      const after = fromGateway.slice(fromGateway.indexOf(refused[0]!) + 1);
      expect(after.map((record) => record.status)).toEqual([200, 200, 200]);
      for (const record of after) expect(record.receivedAt).toBeGreaterThanOrEqual(windowEnd);
    },
    20_000,
  );

  it('fails fast with RATE_LIMITED and retryAfter once the day budget is spent', async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 100, perDay: 3 } } },
      env: { PETSTORE_RATE_LIMITS: '100/1m,3/1d', PETSTORE_MAX_WAIT: '10s' },
    });
    for (let i = 0; i < 3; i++) expect(errorCodes(await target.query(PETS))).toEqual([]);
    const started = Date.now();
    const refused = await target.query(PETS);
    // At once, not after PETSTORE_MAX_WAIT (10 s) of waiting for a day that will not come back.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(errorCodes(refused)).toEqual(['RATE_LIMITED']);
    expect(refused.body.errors?.[0]?.extensions?.retryAfter).toBeGreaterThan(60);
    expect(target.count()).toBe(3);
  });

  it('fails fast when only the upstream knows the day is spent (its Remaining and Reset are the truth)', async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 100, perDay: 2 } } },
      env: { PETSTORE_RATE_LIMITS: '100/1m', PETSTORE_MAX_WAIT: '10s' },
    });
    for (let i = 0; i < 2; i++) expect(errorCodes(await target.query(PETS))).toEqual([]);
    const refused = await target.query(PETS);
    expect(errorCodes(refused)).toEqual(['RATE_LIMITED']);
    expect(target.count()).toBe(2);
    expect(upstream429s(target)).toBe(0);
  });

  it('reports the key budget in extensions.rateLimit', async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 60, perDay: 1_000 } } },
      env: { PETSTORE_RATE_LIMITS: '60/1m,1000/1d' },
    });
    const first = await target.query(PETS);
    const second = await target.query(PETS);
    const quota = (response: typeof first) => response.body.extensions?.rateLimit as Record<string, unknown>;
    expect(quota(first)).toMatchObject({ limit: 60, remaining: 59 });
    expect(quota(second)).toMatchObject({ limit: 60, remaining: 58 });
    expect(Date.parse(quota(second).resetAt as string)).toBeGreaterThan(Date.now());
  });

  it('reports the plan as the budget before the upstream has answered for the key', async () => {
    const target = await start({ env: { PETSTORE_RATE_LIMITS: '60/1m,1000/1d' } });
    const refused = await target.query('{ pet(id: "not a number") { id } }');
    expect(errorCodes(refused)).toEqual(['BAD_USER_INPUT']);
    expect(refused.body.extensions?.rateLimit).toMatchObject({ limit: 60, remaining: 60 });
    expect(target.count()).toBe(0);
  });

  it('queues the requests that wait for their key as jobs of its bottleneck limiter, and sends one that need not at once', async () => {
    const target = await start({
      // Answers that take 200 ms: the twelve are all asked for while the first ones are out.
      store: { keys: { [TEST_KEY]: { perMinute: 100, perDay: 100_000 } }, responseDelayMs: 200 },
      env: { PETSTORE_RATE_LIMITS: '100/1m', PET_LOOKUP: 'list' },
    });
    const jobs = async () => {
      const text = await (await fetch(new URL('/metrics', target.gateway.url))).text();
      return Number(/^petstore_limiter_jobs_total (\d+)$/m.exec(text)?.[1]);
    };
    // The key's first request probes its state, alone: it waited for nothing.
    await target.query(PETS);
    expect(target.count()).toBe(1);
    expect(await jobs()).toBe(0);
    // Twelve at once for a key whose upstream has not shown it counts: a few go, the rest wait as jobs.
    await burst(target, 12);
    expect(target.count()).toBe(13);
    expect(await jobs()).toBeGreaterThanOrEqual(12 - SAFE_CWND);
    expect(await jobs()).toBeLessThanOrEqual(12);
  });

  it('never gets the key banned, however hard it is pushed while another client spends the budget', async () => {
    const target = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 4, perDay: 100_000 } }, minuteMs: 1_000, banThreshold: 3 },
      env: { PETSTORE_RATE_LIMITS: '4/1s', PETSTORE_MAX_WAIT: '3s' },
    });
    // The other client takes the whole budget of each window as it opens.
    let stop = false;
    const other = (async () => {
      while (!stop) {
        await alignToWindow(1_000);
        await exhaustDirectly(target, 4);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
    const responses = await burst(target, 60);
    stop = true;
    await other;
    expect(target.requests.filter((record) => record.code === 'key_banned')).toEqual([]);
    const codes = new Set(responses.flatMap(errorCodes));
    for (const code of codes) expect(code).toBe('RATE_LIMITED');
  }, 30_000);
});
