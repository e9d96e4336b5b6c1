/**
 * More clients from the same budget: stale answers instead of errors (never across keys, never from
 * before the key's own write), answers shared by replicas through a real redis-server, and lookups
 * that learn from list pages.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createGateway, type GatewayHandle } from '../../../src/gateway/server.js';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import type { Pet } from '../../../src/petstore/store.js';
import { errorCodes, type GqlResponse, gql } from '../../helpers/gql.js';
import { type RedisServer, startRedis } from '../../helpers/redis.js';

const KEY_A = 'economy-key-a';
const KEY_B = 'economy-key-b';
const PAGE = '{ pets(first: 3) { nodes { id } } }';
const CREATE = 'mutation { createPet(input: { name: "New", categoryId: "1" }) { pet { id } } }';

const catalogue = (count: number): Pet[] =>
  Array.from({ length: count }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: 1n,
    status: 'available',
  }));

const stale = (response: GqlResponse<unknown>) =>
  response.body.extensions?.stale as { path: (string | number)[]; ageSeconds: number }[] | undefined;

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

async function store(perMinute: number, minuteMs = 60_000): Promise<[PetstoreHandle, RequestRecord[]]> {
  const records: RequestRecord[] = [];
  const handle = await startPetstore({
    keys: { [KEY_A]: { perMinute, perDay: 1_000_000 }, [KEY_B]: { perMinute, perDay: 1_000_000 } },
    minuteMs,
    seed: catalogue(250),
    onRequest: (record) => records.push(record),
  });
  closers.push(() => handle.close());
  return [handle, records];
}

async function gateway(baseUrl: string, env: Record<string, string>, redisPrefix?: string): Promise<GatewayHandle> {
  const handle = await createGateway(
    parseConfig({ PORT: '0', PETSTORE_BASE_URL: baseUrl, LOG_LEVEL: 'silent', ...env }),
    { host: '127.0.0.1', ...(redisPrefix ? { redisPrefix } : {}) },
  );
  closers.push(() => handle.close());
  return handle;
}

describe('stale answers (PETSTORE_STALE_TTL)', () => {
  it('stand in for RATE_LIMITED, saying which field and how old, and never for another key', async () => {
    const [petstore] = await store(2, 2_000);
    const target = await gateway(petstore.url, {
      PETSTORE_RATE_LIMITS: '2/2s',
      PETSTORE_MAX_WAIT: '200ms',
      PETSTORE_STALE_TTL: '60s',
    });
    const fresh = await gql(target.url, PAGE, { key: KEY_A });
    expect(stale(fresh)).toBeUndefined();
    await gql(target.url, '{ pets(first: 4) { nodes { id } } }', { key: KEY_A });
    // The key's window is spent: the same page again is served from its earlier answer.
    const served = await gql(target.url, PAGE, { key: KEY_A });
    expect(served.body.errors).toBeUndefined();
    expect(served.body.data).toEqual(fresh.body.data);
    expect(stale(served)).toEqual([{ path: ['pets'], ageSeconds: expect.any(Number) }]);
    // A page never asked for has nothing to stand in.
    expect(errorCodes(await gql(target.url, '{ pets(first: 5) { nodes { id } } }', { key: KEY_A }))).toEqual([
      'RATE_LIMITED',
    ]);
    // Key B's first request for the same page is its own: key A's answer is never B's.
    await gql(target.url, '{ pets(first: 6) { nodes { id } } }', { key: KEY_B });
    await gql(target.url, '{ pets(first: 7) { nodes { id } } }', { key: KEY_B });
    const other = await gql(target.url, PAGE, { key: KEY_B });
    expect(errorCodes(other)).toEqual(['RATE_LIMITED']);
    expect(stale(other)).toBeUndefined();
  });

  it('stand in when the upstream is down, but never for a world from before the key’s own write', async () => {
    const [petstore] = await store(100_000);
    const target = await gateway(petstore.url, {
      PETSTORE_RATE_LIMITS: 'off',
      PETSTORE_STALE_TTL: '60s',
      PETSTORE_TIMEOUT: '500ms',
    });
    await gql(target.url, PAGE, { key: KEY_A });
    await gql(target.url, '{ pets(first: 9) { nodes { id } } }', { key: KEY_A });
    expect((await gql(target.url, CREATE, { key: KEY_A })).body.errors).toBeUndefined();
    // Stored after the write: still good.
    await gql(target.url, '{ pets(first: 9) { nodes { id } } }', { key: KEY_A });
    await petstore.close();
    const down = await gql(target.url, PAGE, { key: KEY_A });
    expect(errorCodes(down)).toEqual(['UPSTREAM_UNAVAILABLE']);
    const kept = await gql(target.url, '{ pets(first: 9) { nodes { id } } }', { key: KEY_A });
    expect(kept.body.errors).toBeUndefined();
    expect(stale(kept)?.[0]?.path).toEqual(['pets']);
  });
});

describe('replicas sharing answers through Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('serve one replica’s answer from another, and forget it on every replica after a write', async () => {
    const [petstore, records] = await store(100_000);
    const env = { PETSTORE_RATE_LIMITS: 'off', PETSTORE_CACHE_TTL: '20s', REDIS_URL: redis.url };
    const one = await gateway(petstore.url, env, 'economy-shared');
    const two = await gateway(petstore.url, env, 'economy-shared');
    const first = await gql(one.url, PAGE, { key: KEY_A });
    // The answer is kept in Redis a moment after it is served.
    await until(async () => (await redis.cli('KEYS', 'economy-shared:*:answer:*')) !== '');
    const second = await gql(two.url, PAGE, { key: KEY_A });
    expect(second.body.data).toEqual(first.body.data);
    expect(records.filter((record) => record.operation === 'listPets')).toHaveLength(1);
    // Not across keys, even through Redis.
    await gql(two.url, PAGE, { key: KEY_B });
    expect(records.filter((record) => record.operation === 'listPets')).toHaveLength(2);
    // A write through replica two: replica one asks the upstream again.
    await gql(two.url, CREATE, { key: KEY_A });
    await gql(one.url, PAGE, { key: KEY_A });
    expect(records.filter((record) => record.operation === 'listPets' && record.key === KEY_A)).toHaveLength(2);
  });

  it('degrade to the replica’s own cache while Redis is down, never to an error', async () => {
    const [petstore] = await store(100_000);
    const target = await gateway(
      petstore.url,
      { PETSTORE_RATE_LIMITS: 'off', PETSTORE_CACHE_TTL: '20s', REDIS_URL: redis.url },
      'economy-down',
    );
    await redis.kill();
    try {
      for (let i = 0; i < 3; i++) expect((await gql(target.url, PAGE, { key: KEY_A })).body.errors).toBeUndefined();
    } finally {
      await redis.start();
    }
  });
});

describe('lookups that learn from list pages', () => {
  it('answer 100 lookups right after a list of the whole catalogue with no upstream request, an absent id included', async () => {
    const [petstore, records] = await store(100_000);
    const target = await gateway(petstore.url, { PETSTORE_RATE_LIMITS: 'off', PETSTORE_CACHE_TTL: '20s' });
    for (let after: string | null = null, more = true; more; ) {
      const response: GqlResponse<{ pets: { pageInfo: { hasNextPage: boolean; endCursor: string | null } } }> =
        await gql(
          target.url,
          'query ($after: String) { pets(first: 100, after: $after) { pageInfo { hasNextPage endCursor } } }',
          { key: KEY_A, variables: { after } },
        );
      more = response.body.data?.pets.pageInfo.hasNextPage ?? false;
      after = response.body.data?.pets.pageInfo.endCursor ?? null;
    }
    // One complete scan (a lookup of absent ids; one alone would use getPet) teaches the gateway what is not there.
    await gql(target.url, '{ a: pet(id: "999999") { id } b: pet(id: "999998") { id } }', { key: KEY_A });
    const before = records.length;
    const lookups = Array.from({ length: 100 }, (_, i) => `p${i}: pet(id: "${i * 2 + 1}") { id name }`).join(' ');
    const response = await gql(target.url, `{ ${lookups} }`, { key: KEY_A });
    expect(response.body.errors).toBeUndefined();
    expect((response.body.data as Record<string, unknown>).p99).toEqual({ id: '199', name: 'Pet 199' });
    const absent = await gql(target.url, '{ none: pet(id: "999999") { id } }', { key: KEY_A });
    expect(absent.body).toMatchObject({ data: { none: null } });
    expect(absent.body.errors).toBeUndefined();
    expect(records.length - before).toBe(0);
  });
});

async function until(condition: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}
