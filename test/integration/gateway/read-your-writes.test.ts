/**
 * A client reads its own writes (the README's promise; docs/architecture.md, "Read your writes"),
 * against the reference store and real redis-server processes: after a key's createPet has
 * answered, nothing remembered (cached answers, stale answers, pets learned from list pages, a
 * complete scan's "absent") may answer for the world before it, on the replica that wrote or on
 * another one on the same Redis, after Redis lost the write's invalidation or lost everything.
 * Where the upstream cannot be reached, an error is better than a remembered "absent".
 *
 * Faked: nothing. A partition between one replica and Redis is a TCP proxy on loopback that drops
 * that replica's connections and refuses new ones (test/helpers/tcp-proxy.ts); the other replica
 * reaches Redis directly. A lost Redis is a redis-server killed and started again on its port.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createGateway, type GatewayHandle } from '../../../src/gateway/server.js';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import type { Pet } from '../../../src/petstore/store.js';
import { errorCodes, type GqlResponse, gql } from '../../helpers/gql.js';
import { type RedisServer, startRedis } from '../../helpers/redis.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';

const KEY = 'read-your-writes-key';
const OTHER_KEY = 'read-your-writes-other-key';
const ABSENT = '999999';
const LIST = '{ pets(first: 100) { nodes { id } } }';

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

async function store(pets = 250): Promise<[PetstoreHandle, RequestRecord[]]> {
  const records: RequestRecord[] = [];
  const seed: Pet[] = Array.from({ length: pets }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: 1n,
    status: 'available',
  }));
  const handle = await startPetstore({
    keys: { [KEY]: { perMinute: 100_000, perDay: 1_000_000 }, [OTHER_KEY]: { perMinute: 100_000, perDay: 1_000_000 } },
    seed,
    onRequest: (record) => records.push(record),
  });
  closers.push(() => handle.close());
  return [handle, records];
}

async function gateway(baseUrl: string, env: Record<string, string>, redisPrefix?: string): Promise<GatewayHandle> {
  const handle = await createGateway(
    parseConfig({ PORT: '0', PETSTORE_BASE_URL: baseUrl, LOG_LEVEL: 'silent', PETSTORE_RATE_LIMITS: 'off', ...env }),
    { host: '127.0.0.1', ...(redisPrefix ? { redisPrefix } : {}) },
  );
  closers.push(() => handle.close());
  return handle;
}

async function create(target: GatewayHandle): Promise<string> {
  const response = await gql<{ createPet: { pet: { id: string } } }>(
    target.url,
    'mutation { createPet(input: { name: "New", categoryId: "1" }) { pet { id } } }',
    { key: KEY },
  );
  expect(response.body.errors).toBeUndefined();
  return response.body.data?.createPet.pet.id as string;
}

function lookup(target: GatewayHandle, id: string, key = KEY) {
  return gql<{ pet: { id: string } | null }>(target.url, `{ pet(id: "${id}") { id } }`, { key });
}

async function listed(target: GatewayHandle): Promise<string[]> {
  const response = await gql<{ pets: { nodes: { id: string }[] } }>(target.url, LIST, { key: KEY });
  expect(response.body.errors).toBeUndefined();
  return response.body.data?.pets.nodes.map((pet) => pet.id) ?? [];
}

const stale = (response: GqlResponse<unknown>) => response.body.extensions?.stale;

describe('on one replica', () => {
  it('answers a pet created after a complete scan, through pet and _entities, with the cache on', async () => {
    const [petstore, records] = await store();
    // Lookups scan (`auto` asks GET /pets/{id} for one id until a scan's length is known).
    const target = await gateway(petstore.url, { PETSTORE_CACHE_TTL: '20s', PET_LOOKUP: 'list' });
    // A complete scan: the gateway now knows what is absent, and says so without asking again.
    expect((await lookup(target, ABSENT)).body).toMatchObject({ data: { pet: null } });
    const scanned = records.length;
    expect((await lookup(target, ABSENT)).body).toMatchObject({ data: { pet: null } });
    expect(records.length).toBe(scanned);

    const id = await create(target);
    expect((await lookup(target, id)).body).toEqual({ data: { pet: { id } }, extensions: expect.anything() });
    const another = await create(target);
    const entities = await gql(
      target.url,
      'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Pet { id } } }',
      { key: KEY, variables: { r: [{ __typename: 'Pet', id: another }] } },
    );
    expect(entities.body.data).toEqual({ _entities: [{ id: another }] });
  });

  it('answers UPSTREAM_UNAVAILABLE, not a stale null, for a pet created before the upstream went down', async () => {
    const [petstore] = await store();
    // Every lookup a scan (as `auto` does until a scan's length is known), so that each key's scan teaches its memory.
    const target = await gateway(petstore.url, {
      PETSTORE_STALE_TTL: '60s',
      PETSTORE_TIMEOUT: '500ms',
      PET_LOOKUP: 'list',
    });
    expect((await lookup(target, ABSENT)).body).toMatchObject({ data: { pet: null } });
    expect((await lookup(target, ABSENT, OTHER_KEY)).body).toMatchObject({ data: { pet: null } });
    const id = await create(target);
    await petstore.close();

    const created = await lookup(target, id);
    expect(errorCodes(created)).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(created.body.data).toEqual({ pet: null });
    expect(stale(created)).toBeUndefined();
    // Without a write, a pet seen still stands in, marked stale; an absence never does: a stale null
    // cannot be marked, and would deny a pet created since.
    const seen = await lookup(target, '7', OTHER_KEY);
    expect(seen.body.data).toEqual({ pet: { id: '7' } });
    expect(stale(seen)).toEqual([{ path: ['pet'], ageSeconds: expect.any(Number) }]);
    expect(errorCodes(await lookup(target, ABSENT, OTHER_KEY))).toEqual(['UPSTREAM_UNAVAILABLE']);
  });
});

describe('across replicas on one Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('answers through one replica a pet created through another after a complete scan', async () => {
    const [petstore] = await store();
    const env = { PETSTORE_CACHE_TTL: '20s', REDIS_URL: redis.url, PET_LOOKUP: 'list' };
    const one = await gateway(petstore.url, env, 'ryw-replicas');
    const two = await gateway(petstore.url, env, 'ryw-replicas');
    expect((await lookup(two, ABSENT)).body).toMatchObject({ data: { pet: null } });
    const id = await create(one);
    expect((await lookup(two, id)).body.data).toEqual({ pet: { id } });
  });

  it('after a partition between a replica and Redis heals, neither serves the list from before a write made in it', async () => {
    const [petstore] = await store(50);
    const proxy: TcpProxy = await startTcpProxy({ port: redis.port });
    closers.push(() => proxy.close());
    const env = { PETSTORE_CACHE_TTL: '20s', PETSTORE_TIMEOUT: '2s' };
    const cutOff = await gateway(petstore.url, { ...env, REDIS_URL: `redis://127.0.0.1:${proxy.port}` }, 'ryw-cut');
    const direct = await gateway(petstore.url, { ...env, REDIS_URL: redis.url }, 'ryw-cut');
    const before = await listed(cutOff);
    expect(await listed(direct)).toEqual(before);

    await proxy.cut();
    const id = await create(cutOff);
    // While cut off, the replica that wrote knows of its write.
    expect(await listed(cutOff)).toContain(id);
    await proxy.heal();
    // The write reaches Redis once it answers again: within a reconnect and a retry, both replicas see it.
    const seen = await until(async () => (await listed(direct)).includes(id) && (await listed(cutOff)).includes(id));
    expect(seen).toBe(true);
  });

  it('after Redis lost everything, no replica recalls a scan from before a write', async () => {
    const [petstore] = await store();
    const env = { PETSTORE_CACHE_TTL: '20s', REDIS_URL: redis.url, PET_LOOKUP: 'list' };
    const one = await gateway(petstore.url, env, 'ryw-restart');
    const two = await gateway(petstore.url, env, 'ryw-restart');
    // One write, then a complete scan through replica two: learned under the write's generation.
    await create(one);
    expect((await lookup(two, ABSENT)).body).toMatchObject({ data: { pet: null } });
    // Redis restarts empty; one more write. Generations that counted writes would count this one as
    // the first again, and meet the scan's; they must not.
    await redis.kill();
    await redis.start();
    const id = await create(one);
    expect((await lookup(two, id)).body.data).toEqual({ pet: { id } });
  });
});

/** Polls `condition` until it is truthy or `ms` pass; its last value. */
async function until<T>(condition: () => Promise<T>, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await condition();
    if (value || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
