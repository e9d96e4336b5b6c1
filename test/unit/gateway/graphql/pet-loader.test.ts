/**
 * The per-request pet loader against a fake RestClient (an in-memory catalogue with pages of 100),
 * for what the reference store cannot produce on demand: a transient failure of one lookup in the
 * middle of a request, and a list page held in flight while a lookup batch is dispatched. Upstream
 * request counts against the real store are in test/integration/gateway/pet-lookups.test.ts.
 */

import { describe, expect, it } from 'vitest';
import type { PetLookup } from '../../../../src/config.js';
import {
  ErrorCode,
  type GatewayError,
  rateLimited,
  upstreamUnavailable,
} from '../../../../src/gateway/graphql/errors.js';
import { createPetLookups, type LookupStats } from '../../../../src/gateway/graphql/loaders/pet-loader.js';
import type { PetModel } from '../../../../src/gateway/graphql/models.js';
import { createLogger } from '../../../../src/gateway/observability/logger.js';
import type { RestClient } from '../../../../src/gateway/upstream/client.js';
import { createOperation } from '../../../../src/gateway/upstream/operation.js';

const KEY = 'unit-key';
const BASE = new URL('http://store.test/v1/');

function pet(id: number): PetModel {
  return { id: String(id), name: `Pet ${id}`, categoryId: '1', status: 'available' };
}

interface FakeStore {
  readonly client: RestClient;
  /** Every call, as `list <after>` or `get <id>`, in order. */
  readonly calls: string[];
  /** Errors the next calls throw instead of answering, one per call. */
  readonly failures: Error[];
  /** While set, list calls wait for it before answering. */
  gate: Promise<void> | undefined;
}

function fakeStore(count: number): FakeStore {
  const pets = Array.from({ length: count }, (_, i) => pet(i + 1));
  const store: FakeStore = {
    calls: [],
    failures: [],
    gate: undefined,
    client: {
      baseUrl: BASE,
      petsUrl: ({ limit }) => new URL(`pets?limit=${limit}`, BASE),
      async listPets(_key, url) {
        const after = url.searchParams.get('after');
        store.calls.push(`list ${after ?? 'start'}`);
        await store.gate;
        const failure = store.failures.shift();
        if (failure) throw failure;
        const start = after === null ? 0 : pets.findIndex((p) => p.id === after) + 1;
        const limit = Number(url.searchParams.get('limit'));
        const page = pets.slice(start, start + limit);
        const more = start + limit < pets.length;
        return { pets: page, next: more ? new URL(`pets?limit=${limit}&after=${page.at(-1)?.id}`, BASE) : undefined };
      },
      async getPet(_key, id) {
        store.calls.push(`get ${id}`);
        const failure = store.failures.shift();
        if (failure) throw failure;
        return { pet: pets.find((p) => p.id === id) ?? null };
      },
      createPet: async () => {
        throw new Error('not used here');
      },
      forOperation() {
        return this;
      },
      close: async () => {},
    },
  };
  return store;
}

function operation(maxRequests?: number) {
  return createOperation({ logger: createLogger('silent'), maxWaitMs: 1_000, timeoutMs: 1_000, maxRequests });
}

function lookups(store: FakeStore, strategy: PetLookup, stats: LookupStats = { fullScanPages: undefined }) {
  return createPetLookups({
    client: store.client,
    key: KEY,
    keyId: 'unit-key-id',
    operation: operation(),
    strategy,
    stats,
    now: () => Date.UTC(2026, 0, 1),
  });
}

function codeOf(error: unknown): unknown {
  return (error as GatewayError).extensions.code;
}

describe('pet loader (fake RestClient)', () => {
  it('answers one value per key in key order, null for absent ids, from one scan', async () => {
    const store = fakeStore(250);
    const { loader } = lookups(store, 'list');
    const pets = await loader.loadMany(['7', '999', '250', '7', '1']);
    expect(pets).toEqual([pet(7), null, pet(250), pet(7), pet(1)]);
    expect(store.calls).toEqual(['list start', 'list 100', 'list 200']);
  });

  it('rejects every key of a batch whose scan failed on the network, and does not cache the failure for the request', async () => {
    const store = fakeStore(250);
    const { loader } = lookups(store, 'list');
    store.failures.push(upstreamUnavailable('the Pet Store closed the connection'));
    const first = await Promise.allSettled([loader.load('5'), loader.load('150')]);
    expect(first.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(first.map((result) => result.status === 'rejected' && codeOf(result.reason))).toEqual([
      ErrorCode.UPSTREAM_UNAVAILABLE,
      ErrorCode.UPSTREAM_UNAVAILABLE,
    ]);
    // Same loader, so same request: the ids are asked again, not answered with the cached failure.
    expect(await loader.load('5')).toEqual(pet(5));
    expect(await loader.load('150')).toEqual(pet(150));
    expect(store.calls).toEqual(['list start', 'list start', 'list start', 'list 100']);
  });

  it('does not cache a RATE_LIMITED legacy lookup for the request: the same id later is fetched again', async () => {
    const store = fakeStore(10);
    const { loader } = lookups(store, 'legacy');
    store.failures.push(rateLimited(3));
    await expect(loader.load('4')).rejects.toMatchObject({
      extensions: { code: ErrorCode.RATE_LIMITED, retryAfter: 3 },
    });
    expect(await loader.load('4')).toEqual(pet(4));
    expect(store.calls).toEqual(['get 4', 'get 4']);
  });

  it('fails only the ids of a legacy batch whose getPet failed, and asks for those again later in the request', async () => {
    const store = fakeStore(10);
    const { loader } = lookups(store, 'legacy');
    store.failures.push(rateLimited(1));
    const first = await Promise.allSettled(['1', '2', '3'].map((id) => loader.load(id)));
    expect(first.map((result) => result.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(await loader.loadMany(['1', '2', '3'])).toEqual([pet(1), pet(2), pet(3)]);
    expect(store.calls).toEqual(['get 1', 'get 2', 'get 3', 'get 1']);
  });

  it('waits for a list page in flight in the same request, and costs nothing for a pet the page carries', async () => {
    const store = fakeStore(250);
    const { loader, client } = lookups(store, 'list');
    let release = () => {};
    store.gate = new Promise((resolve) => {
      release = resolve;
    });
    // What `{ pets(first: 10) { … } pet(id: "3") { … } }` does: the list is sent, then the lookup is made.
    const list = client.listPets(KEY, client.petsUrl({ limit: 10 }));
    const lookup = loader.load('3');
    setImmediate(release);
    expect((await list).pets).toHaveLength(10);
    expect(await lookup).toEqual(pet(3));
    expect(store.calls).toEqual(['list start']);
  });

  it('still looks up a pet the list in flight did not carry, and a failed list only leaves the lookup to its own scan', async () => {
    const store = fakeStore(250);
    const { loader, client } = lookups(store, 'list');
    store.failures.push(upstreamUnavailable('the Pet Store did not answer in time'));
    const list = client.listPets(KEY, client.petsUrl({ limit: 10 }));
    const lookup = loader.load('120');
    await expect(list).rejects.toThrow('did not answer in time');
    expect(await lookup).toEqual(pet(120));
    expect(store.calls).toEqual(['list start', 'list start', 'list 100']);
  });

  it('auto: with no full scan known, calls getPet for one id (a scan costs at least one page) and scans for two', async () => {
    const store = fakeStore(250);
    expect(await lookups(store, 'auto').loader.load('9')).toEqual(pet(9));
    expect(await lookups(store, 'auto').loader.loadMany(['9', '10'])).toEqual([pet(9), pet(10)]);
    expect(store.calls).toEqual(['get 9', 'list start']);
  });

  it('auto: once a full scan is known, uses getPet for a batch of fewer ids than its pages, and scans otherwise', async () => {
    const store = fakeStore(250);
    const stats: LookupStats = { fullScanPages: undefined };
    expect(await lookups(store, 'auto', stats).loader.loadMany(['998', '999'])).toEqual([null, null]);
    expect(stats.fullScanPages).toBe(3);
    expect(await lookups(store, 'auto', stats).loader.loadMany(['5', '6'])).toEqual([pet(5), pet(6)]);
    expect(await lookups(store, 'auto', stats).loader.loadMany(['5', '6', '7'])).toEqual([pet(5), pet(6), pet(7)]);
    expect(store.calls).toEqual(['list start', 'list 100', 'list 200', 'get 5', 'get 6', 'list start']);
  });

  it('never calls getPet on or after the sunset date, whatever the strategy', async () => {
    const store = fakeStore(10);
    const stats: LookupStats = { fullScanPages: 5 };
    for (const strategy of ['legacy', 'auto'] as const) {
      const { loader } = createPetLookups({
        client: store.client,
        key: KEY,
        keyId: 'unit-key-id',
        operation: operation(),
        strategy,
        stats,
        now: () => Date.UTC(2030, 11, 5),
      });
      expect(await loader.load('2')).toEqual(pet(2));
    }
    expect(store.calls).toEqual(['list start', 'list start']);
  });
});
