/**
 * Rate limits of the reference Pet Store over real HTTP, on an injected clock: the plans, the
 * X-RateLimit-* headers, fixed epoch-aligned minute and day windows, 429 with Retry-After, and
 * the temporary ban (docs/rest-interface.md). No real time passes: tests move `t` instead.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { parseKeys } from '../../../src/petstore/plans.js';
import { type PetstoreHandle, type PetstoreOptions, startPetstore } from '../../../src/petstore/start.js';
import type { Pet } from '../../../src/petstore/store.js';
import { callStore, expectError, expectPets, type StoreResponse } from '../../helpers/petstore-client.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** Midnight UTC: the start of a day window and of a minute window alike. */
const T0 = Date.UTC(2030, 0, 1);
const T0_SECONDS = T0 / 1000;

const SEED: Pet[] = [{ id: 1n, name: 'Rex', categoryId: 1n, status: 'available' }];

let t = T0;
const stores: PetstoreHandle[] = [];

afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  t = T0;
});

async function start(keys: NonNullable<PetstoreOptions['keys']>, options: PetstoreOptions = {}): Promise<string> {
  const store = await startPetstore({ keys, seed: SEED, now: () => t, ...options });
  stores.push(store);
  return store.url;
}

function list(url: string, key: string, query = ''): Promise<StoreResponse> {
  return callStore(url, `/pets${query}`, { key });
}

interface Quota {
  readonly limit: number;
  readonly remaining: number;
  /** X-RateLimit-Reset: Unix seconds. */
  readonly reset: number;
}

/** Asserts that all three X-RateLimit headers are present as plain integers, and returns them. */
function quota(response: StoreResponse): Quota {
  const read = (name: string): number => {
    const value = response.headers.get(name);
    expect(value, name).toMatch(/^[0-9]+$/);
    return Number(value);
  };
  return {
    limit: read('x-ratelimit-limit'),
    remaining: read('x-ratelimit-remaining'),
    reset: read('x-ratelimit-reset'),
  };
}

/** Asserts a 429 with the given code and a whole-seconds Retry-After, and returns Retry-After. */
function expect429(response: StoreResponse, code: 'rate_limited' | 'key_banned'): number {
  expectError(response, 429, code);
  const retryAfter = response.headers.get('retry-after');
  expect(retryAfter).toMatch(/^[1-9][0-9]*$/);
  return Number(retryAfter);
}

describe('plans', () => {
  it.each([
    ['free', 'free', 60],
    ['pro', 'pro', 300],
    ['business', 'business', 1_000],
    ['enterprise without its own numbers', 'enterprise', 10_000],
  ] as const)('shows the %s plan through X-RateLimit-Limit on the first request', async (_plan, plan, perMinute) => {
    const url = await start({ key: plan });
    const response = await list(url, 'key');
    expect(response.status).toBe(200);
    expect(quota(response)).toEqual({ limit: perMinute, remaining: perMinute - 1, reset: T0_SECONDS + 60 });
  });

  it('shows an enterprise contract with custom limits', async () => {
    const url = await start({ contract: { perMinute: 5_000, perDay: 200_000 } });
    expect(quota(await list(url, 'contract'))).toEqual({ limit: 5_000, remaining: 4_999, reset: T0_SECONDS + 60 });
  });

  it('gives each key its own plan in one store', async () => {
    const url = await start({ a: 'free', b: 'pro', c: 'business', d: { perMinute: 7, perDay: 70 } });
    const limits = [];
    for (const key of ['a', 'b', 'c', 'd']) limits.push(quota(await list(url, key)).limit);
    expect(limits).toEqual([60, 300, 1_000, 7]);
  });

  it('takes the keys parsed from PETSTORE_KEYS', async () => {
    const url = await start(parseKeys('alpha:pro, beta:enterprise=7/9'));
    expect(quota(await list(url, 'alpha')).limit).toBe(300);
    expect(quota(await list(url, 'beta'))).toEqual({ limit: 7, remaining: 6, reset: T0_SECONDS + 60 });
  });

  it('lets a free key make 60 requests in a minute and refuses the 61st', async () => {
    const url = await start({ key: 'free' });
    for (let i = 1; i <= 60; i++) {
      const response = await list(url, 'key');
      expect(response.status).toBe(200);
      expect(quota(response).remaining).toBe(60 - i);
    }
    expect(expect429(await list(url, 'key'), 'rate_limited')).toBe(60);
  });
});

describe('X-RateLimit headers', () => {
  it('are on every response to a known key, whatever its status, with Remaining counting down', async () => {
    const url = await start({ key: { perMinute: 7, perDay: 100 } }, { maxBodyBytes: 64 });
    const responses: StoreResponse[] = [
      await list(url, 'key'),
      await callStore(url, '/pets', { key: 'key', body: '{"name":"Rex","categoryId":1}' }),
      await callStore(url, '/pets', { key: 'key', body: '{"name":""}' }),
      await callStore(url, '/pets', { key: 'key', body: JSON.stringify({ name: 'x'.repeat(100), categoryId: 1 }) }),
      await callStore(url, '/pets/999', { key: 'key' }),
      await list(url, 'key', '?limit=0'),
      await callStore(url, '/pets/1', { key: 'key' }),
      await list(url, 'key'),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 201, 400, 413, 404, 400, 200, 429]);
    expect(responses.map(quota)).toEqual(
      [6, 5, 4, 3, 2, 1, 0, 0].map((remaining) => ({ limit: 7, remaining, reset: T0_SECONDS + 60 })),
    );
  });

  it('give Reset as the Unix time in seconds at which the current window ends', async () => {
    const url = await start({ key: { perMinute: 10, perDay: 1_000 } });
    t = T0 + 12_345;
    expect(quota(await list(url, 'key')).reset).toBe(T0_SECONDS + 60);
    t = T0 + 59_999;
    expect(quota(await list(url, 'key')).reset).toBe(T0_SECONDS + 60);
    t = T0 + 5 * MINUTE + 1;
    expect(quota(await list(url, 'key'))).toEqual({ limit: 10, remaining: 9, reset: T0_SECONDS + 6 * 60 });
  });

  it('describe the window with fewer requests left', async () => {
    const url = await start({ key: { perMinute: 3, perDay: 5 } }, { banThreshold: 100 });
    const seen: Quota[] = [];
    for (let i = 0; i < 3; i++) seen.push(quota(await list(url, 'key')));
    t = T0 + MINUTE;
    for (let i = 0; i < 2; i++) seen.push(quota(await list(url, 'key')));
    expect(seen).toEqual([
      // The minute window has fewer left (2 of 3 against 4 of 5 for the day) ...
      { limit: 3, remaining: 2, reset: T0_SECONDS + 60 },
      { limit: 3, remaining: 1, reset: T0_SECONDS + 60 },
      { limit: 3, remaining: 0, reset: T0_SECONDS + 60 },
      // ... until a new minute starts and the day has only 2 left.
      { limit: 5, remaining: 1, reset: T0_SECONDS + 86_400 },
      { limit: 5, remaining: 0, reset: T0_SECONDS + 86_400 },
    ]);
  });

  it('describe the day window when the day limit is the smaller one from the start', async () => {
    const url = await start({ key: { perMinute: 10, perDay: 4 } });
    expect(quota(await list(url, 'key'))).toEqual({ limit: 4, remaining: 3, reset: T0_SECONDS + 86_400 });
  });

  it('describe the window that ends last when both have as many left', async () => {
    const url = await start({ key: { perMinute: 5, perDay: 5 } });
    expect(quota(await list(url, 'key'))).toEqual({ limit: 5, remaining: 4, reset: T0_SECONDS + 86_400 });
  });
});

describe('the minute window', () => {
  it('answers a request over the limit with 429 rate_limited and Retry-After in whole seconds', async () => {
    const url = await start({ key: { perMinute: 2, perDay: 100 } });
    t = T0 + 45_500;
    expect((await list(url, 'key')).status).toBe(200);
    expect((await list(url, 'key')).status).toBe(200);
    const refused = await list(url, 'key');
    // 14.5 s remain in the window: rounded up, so a client never comes back early.
    expect(expect429(refused, 'rate_limited')).toBe(15);
    expect(quota(refused)).toEqual({ limit: 2, remaining: 0, reset: T0_SECONDS + 60 });
    expect(refused.headers.get('link')).toBeNull();
  });

  it('counts down Retry-After as the clock moves within the window', async () => {
    const url = await start({ key: { perMinute: 1, perDay: 100 } }, { banThreshold: 100 });
    await list(url, 'key');
    const retryAfters: number[] = [];
    for (const at of [0, 1, 30_000, 58_001, 59_999]) {
      t = T0 + at;
      retryAfters.push(expect429(await list(url, 'key'), 'rate_limited'));
    }
    expect(retryAfters).toEqual([60, 60, 30, 2, 1]);
  });

  it('does not count refused requests against the next window', async () => {
    const url = await start({ key: { perMinute: 2, perDay: 100 } }, { banThreshold: 100 });
    for (let i = 0; i < 2; i++) await list(url, 'key');
    for (let i = 0; i < 5; i++) expect((await list(url, 'key')).status).toBe(429);
    t = T0 + 59_999;
    expect((await list(url, 'key')).status).toBe(429);
    t = T0 + MINUTE;
    const served = await list(url, 'key');
    expect(served.status).toBe(200);
    expect(served.headers.get('retry-after')).toBeNull();
    expect(quota(served)).toEqual({ limit: 2, remaining: 1, reset: T0_SECONDS + 120 });
  });

  it('refuses every operation alike once the limit is reached', async () => {
    const url = await start({ key: { perMinute: 1, perDay: 100 } }, { banThreshold: 100 });
    await list(url, 'key');
    const before = catalogueSize(url);
    expect429(await callStore(url, '/pets', { key: 'key', body: '{"name":"Rex","categoryId":1}' }), 'rate_limited');
    expect429(await callStore(url, '/pets/1', { key: 'key' }), 'rate_limited');
    expect429(await list(url, 'key', '?limit=0'), 'rate_limited');
    expect(catalogueSize(url)).toBe(before);
  });
});

/** The catalogue size of the store at `url`, read from its handle (no request, so no quota used). */
function catalogueSize(url: string): number | undefined {
  return stores.find((store) => store.url === url)?.catalogue.size;
}

describe('the day window', () => {
  it('answers with 429 whose Retry-After and Reset point at the end of the day', async () => {
    const url = await start({ key: { perMinute: 3, perDay: 5 } }, { banThreshold: 100 });
    for (let i = 0; i < 3; i++) expect((await list(url, 'key')).status).toBe(200);
    t = T0 + MINUTE;
    for (let i = 0; i < 2; i++) expect((await list(url, 'key')).status).toBe(200);

    const refused = await list(url, 'key');
    expect(expect429(refused, 'rate_limited')).toBe(86_400 - 60);
    expect(quota(refused)).toEqual({ limit: 5, remaining: 0, reset: T0_SECONDS + 86_400 });

    // A new minute does not help while the day is used up.
    t = T0 + 10 * MINUTE + 250;
    const later = await list(url, 'key');
    expect(expect429(later, 'rate_limited')).toBe(86_400 - 600);
    expect(quota(later)).toEqual({ limit: 5, remaining: 0, reset: T0_SECONDS + 86_400 });
  });

  it('serves again with both windows fresh once the clock passes the end of the day', async () => {
    const url = await start({ key: { perMinute: 3, perDay: 3 } }, { banThreshold: 100 });
    for (let i = 0; i < 3; i++) await list(url, 'key');
    t = T0 + DAY - 1;
    expect(expect429(await list(url, 'key'), 'rate_limited')).toBe(1);
    t = T0 + DAY;
    const served = await list(url, 'key');
    expect(served.status).toBe(200);
    expect(quota(served)).toEqual({ limit: 3, remaining: 2, reset: T0_SECONDS + 2 * 86_400 });
  });

  it('points Retry-After at the later end when both windows are used up', async () => {
    const url = await start({ key: { perMinute: 2, perDay: 2 } }, { banThreshold: 100 });
    for (let i = 0; i < 2; i++) await list(url, 'key');
    const refused = await list(url, 'key');
    expect(expect429(refused, 'rate_limited')).toBe(86_400);
    expect(quota(refused)).toEqual({ limit: 2, remaining: 0, reset: T0_SECONDS + 86_400 });
  });
});

describe('the ban', () => {
  const options = { banThreshold: 3, banMs: 2 * MINUTE } as const;

  it('bans a key that sends banThreshold requests during one 429 period, until the ban ends', async () => {
    const url = await start({ key: { perMinute: 1, perDay: 1_000 } }, options);
    expect((await list(url, 'key')).status).toBe(200);
    expect(expect429(await list(url, 'key'), 'rate_limited')).toBe(60);
    t = T0 + 10_000;
    expect(expect429(await list(url, 'key'), 'rate_limited')).toBe(50);
    t = T0 + 20_000;
    const banned = await list(url, 'key');
    expect(expect429(banned, 'key_banned')).toBe(120);
    expect(quota(banned)).toEqual({ limit: 1, remaining: 0, reset: T0_SECONDS + 20 + 120 });

    // Still banned after the minute window has passed, and requests during the ban do not extend it.
    const during: number[] = [];
    for (const at of [20_000, 30_000, MINUTE, 2 * MINUTE, 140_000 - 1]) {
      t = T0 + at;
      const response = await list(url, 'key');
      during.push(expect429(response, 'key_banned'));
      expect(quota(response)).toEqual({ limit: 1, remaining: 0, reset: T0_SECONDS + 140 });
    }
    expect(during).toEqual([120, 110, 80, 20, 1]);

    t = T0 + 140_000;
    const served = await list(url, 'key');
    expect(served.status).toBe(200);
    expect(quota(served)).toEqual({ limit: 1, remaining: 0, reset: T0_SECONDS + 180 });
  });

  it('after a ban ends, a refusal starts a new 429 period instead of banning again', async () => {
    const url = await start({ key: { perMinute: 10, perDay: 1 } }, options);
    expect((await list(url, 'key')).status).toBe(200);
    expect429(await list(url, 'key'), 'rate_limited');
    expect429(await list(url, 'key'), 'rate_limited');
    expect429(await list(url, 'key'), 'key_banned');
    t = T0 + options.banMs;
    // The day is still spent: the client is told to come back at its end, not banned once more.
    expect(expect429(await list(url, 'key'), 'rate_limited')).toBe((DAY - options.banMs) / 1000);
  });

  it('by default bans on the 10th request of a 429 period, for 15 minutes', async () => {
    const url = await start({ key: { perMinute: 1, perDay: 1_000 } });
    expect((await list(url, 'key')).status).toBe(200);
    for (let i = 1; i <= 9; i++) expect429(await list(url, 'key'), 'rate_limited');
    expect(expect429(await list(url, 'key'), 'key_banned')).toBe(15 * 60);
    t = T0 + 15 * MINUTE - 1_000;
    expect(expect429(await list(url, 'key'), 'key_banned')).toBe(1);
    t = T0 + 15 * MINUTE;
    expect((await list(url, 'key')).status).toBe(200);
  });

  it('counts refusals per 429 period: fewer than banThreshold in each of several periods is no ban', async () => {
    const url = await start({ key: { perMinute: 1, perDay: 1_000 } }, options);
    for (let minute = 0; minute < 5; minute++) {
      t = T0 + minute * MINUTE;
      expect((await list(url, 'key')).status).toBe(200);
      expect429(await list(url, 'key'), 'rate_limited');
      expect429(await list(url, 'key'), 'rate_limited');
    }
  });

  it('never bans a client that waits Retry-After after its first 429', async () => {
    const url = await start({ key: { perMinute: 2, perDay: 1_000 } }, { banThreshold: 2, banMs: 15 * MINUTE });
    t = T0 + 30_500;
    let served = 0;
    for (let round = 0; round < 30; round++) {
      let response = await list(url, 'key');
      while (response.status === 200) {
        served++;
        response = await list(url, 'key');
      }
      const retryAfter = expect429(response, 'rate_limited');
      t += retryAfter * 1_000;
    }
    expect(served).toBe(60);
  });

  it('never bans a client that waits out a used-up day', async () => {
    const url = await start({ key: { perMinute: 5, perDay: 2 } }, { banThreshold: 2 });
    t = T0 + 3 * 3_600_000 + 123;
    for (let day = 0; day < 3; day++) {
      expect((await list(url, 'key')).status).toBe(200);
      expect((await list(url, 'key')).status).toBe(200);
      const retryAfter = expect429(await list(url, 'key'), 'rate_limited');
      t += retryAfter * 1_000;
    }
    expect((await list(url, 'key')).status).toBe(200);
  });
});

describe('keys', () => {
  it('are limited independently: one key’s 429 does not affect another', async () => {
    const url = await start({ a: { perMinute: 1, perDay: 100 }, b: { perMinute: 1, perDay: 100 } });
    expect((await list(url, 'a')).status).toBe(200);
    expect429(await list(url, 'a'), 'rate_limited');
    const b = await list(url, 'b');
    expect(b.status).toBe(200);
    expect(quota(b)).toEqual({ limit: 1, remaining: 0, reset: T0_SECONDS + 60 });
  });

  it('are banned independently: one key’s ban does not affect another', async () => {
    const url = await start(
      { a: { perMinute: 1, perDay: 100 }, b: { perMinute: 2, perDay: 100 } },
      { banThreshold: 2, banMs: 10 * MINUTE },
    );
    await list(url, 'a');
    expect429(await list(url, 'a'), 'rate_limited');
    expect429(await list(url, 'a'), 'key_banned');
    const b = await list(url, 'b');
    expect(expectPets(b)).toHaveLength(1);
    expect(quota(b)).toEqual({ limit: 2, remaining: 1, reset: T0_SECONDS + 60 });
    t = T0 + MINUTE;
    expect429(await list(url, 'a'), 'key_banned');
    expect((await list(url, 'b')).status).toBe(200);
  });

  it('do not lose quota to 401s for unknown keys', async () => {
    const url = await start({ a: { perMinute: 1, perDay: 100 } });
    for (let i = 0; i < 5; i++) expectError(await list(url, 'nope'), 401, 'unauthorized');
    expect(quota(await list(url, 'a'))).toEqual({ limit: 1, remaining: 0, reset: T0_SECONDS + 60 });
  });
});
