/**
 * What a failed `createPet` tells its client (`extensions.outcome`): `unknown` when the request
 * reached the upstream and no usable answer came (the pet may exist: the client should look it up
 * before it retries), `not_sent` when it never left the gateway (a retry cannot duplicate it).
 * Real sockets throughout: the reference store behind a fault-injecting TCP proxy (for the late,
 * cut and reset answers, and a port that refuses connections), and a small upstream on loopback
 * for the answers a well-behaved store never gives (a 503 after creating, an unreadable 201).
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import { type FaultProxy, startFaultProxy } from '../../helpers/fault-proxy.js';
import { errorCodes, type GqlResponse } from '../../helpers/gql.js';
import { answer, startHostileUpstream } from '../../helpers/hostile-upstream.js';
import { type GatewayUnderTest, refusedBaseUrl, startGateway, UPSTREAM_KEY } from '../../helpers/upstream.js';

const TIMEOUT_MS = 300;
const CREATE = 'mutation { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id name } } }';
const PETS = '{ pets(first: 2) { nodes { id } } }';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The one error of a response: UPSTREAM_UNAVAILABLE, and its `extensions.outcome`. */
function outcomeOf(response: GqlResponse<unknown>): unknown {
  expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
  return response.body.errors?.[0]?.extensions?.outcome;
}

describe('createPet through a fault-injecting proxy in front of the reference store', () => {
  let store: PetstoreHandle;
  let proxy: FaultProxy;
  let gateway: GatewayUnderTest;
  const requests: RequestRecord[] = [];
  const created = () => requests.filter((record) => record.operation === 'createPet').length;

  beforeAll(async () => {
    store = await startPetstore({
      keys: { [UPSTREAM_KEY]: { perMinute: 100_000, perDay: 1_000_000 } },
      onRequest: (record) => requests.push(record),
    });
    proxy = await startFaultProxy({ port: store.port });
    gateway = await startGateway(`${proxy.origin}/v1`, { PETSTORE_TIMEOUT: `${TIMEOUT_MS}ms` });
  });
  afterAll(async () => {
    await gateway.close();
    await proxy.close();
    await store.close();
  });
  beforeEach(async () => {
    if (!proxy.listening) await proxy.accept();
    proxy.set('pass');
    requests.length = 0;
  });

  it('is unknown when the store created the pet but answered after PETSTORE_TIMEOUT', async () => {
    const before = store.catalogue.size;
    proxy.set('latency', { latencyMs: 2 * TIMEOUT_MS });
    expect(outcomeOf(await gateway.query(CREATE))).toBe('unknown');
    // The pet exists: a client told "not sent" would have retried and made a second one.
    expect(created()).toBe(1);
    expect(store.catalogue.size).toBe(before + 1);
  });

  it('is unknown when the connection is reset in the middle of the answer', async () => {
    const before = store.catalogue.size;
    proxy.set('reset-mid-body', { times: 1 });
    expect(outcomeOf(await gateway.query(CREATE))).toBe('unknown');
    expect(store.catalogue.size).toBe(before + 1);
  });

  it('is unknown when a kept-alive connection is reset as the request is written: the gateway cannot tell whether it arrived', async () => {
    expect((await gateway.query(PETS)).body.errors).toBeUndefined(); // leaves a connection in the pool
    proxy.set('reset-reused', { times: 1 });
    expect(outcomeOf(await gateway.query(CREATE))).toBe('unknown');
    expect(created()).toBe(0);
  });

  it('is not_sent when the connection is refused, and a retry then creates exactly one pet', async () => {
    const before = store.catalogue.size;
    await proxy.refuse();
    expect(outcomeOf(await gateway.query(CREATE))).toBe('not_sent');
    expect(requests).toEqual([]);
    await proxy.accept();
    expect((await gateway.query(CREATE)).body.errors).toBeUndefined();
    expect(store.catalogue.size).toBe(before + 1);
  });
});

describe('createPet against an upstream that answers without a created pet', () => {
  it.each([
    ['a 503 after it created the pet', 503, '{"code":"unavailable","message":"try later","status":503}'],
    ['a 502 from a proxy in front of it', 502, '<html>Bad Gateway</html>'],
    ['a 201 whose body is not a Pet', 201, '{"id":"not a number"}'],
  ])('is unknown after %s', async (_label, status, body) => {
    const upstream = await startHostileUpstream((_req, res) => answer(res, status, body));
    const gateway = await startGateway(upstream.url);
    try {
      expect(outcomeOf(await gateway.query(CREATE))).toBe('unknown');
      expect(upstream.requests.map((request) => request.method)).toEqual(['POST']);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('is not_sent for a create left too little of its operation’s time, after a slow one in the same mutation', async () => {
    // PETSTORE_MAX_WAIT 100 ms + PETSTORE_TIMEOUT 2 s: the operation is answered within 2.1 s. The
    // first create is answered at 1.3 s, so the second would have 0.8 s, under half its timeout:
    // it could create a pet whose creation its client never learns of, so it is not sent at all.
    const upstream = await startHostileUpstream((req, res, { index }) => {
      if (req.method !== 'POST') return answer(res, 200, '[]');
      setTimeout(() => answer(res, 201, `{"id":${index + 1},"name":"Rex","categoryId":1,"status":"available"}`), 1_300);
    });
    const gateway = await startGateway(upstream.url, { PETSTORE_MAX_WAIT: '100ms', PETSTORE_TIMEOUT: '2s' });
    try {
      const response = await gateway.query(
        'mutation { a: createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } b: createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }',
      );
      // createPet is non-null: b's error nulls the whole data, a's pet included.
      expect(response.body.data).toBeNull();
      expect(response.body.errors?.map((error) => [error.path, error.extensions?.outcome])).toEqual([
        [['b'], 'not_sent'],
      ]);
      await sleep(100);
      expect(upstream.requests).toHaveLength(1);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('is not_sent when it waited behind a request the upstream never answered, and was not sent', async () => {
    // With the key's budget unknown, the first request is a probe and the rest wait for its answer;
    // none comes, so past PETSTORE_MAX_WAIT the create is refused as the upstream's silence.
    const upstream = await startHostileUpstream(() => {});
    const gateway = await startGateway(upstream.url, {
      PETSTORE_RATE_LIMITS: '60/1m',
      PETSTORE_MAX_WAIT: '300ms',
      PETSTORE_TIMEOUT: '1s',
    });
    try {
      const probe = gateway.query(PETS);
      while (upstream.requests.length === 0) await sleep(10);
      expect(outcomeOf(await gateway.query(CREATE))).toBe('not_sent');
      expect(upstream.requests.map((request) => request.method)).toEqual(['GET']);
      await probe;
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('says nothing of an outcome where there is no write: a list that fails, a create refused with 400', async () => {
    const refused = await startGateway(await refusedBaseUrl());
    const upstream = await startHostileUpstream((_req, res) =>
      answer(res, 400, '{"code":"invalid_request","message":"no","status":400}'),
    );
    const rejecting = await startGateway(upstream.url);
    try {
      const list = await refused.query(PETS);
      expect(outcomeOf(list)).toBeUndefined();
      const create = await rejecting.query(CREATE);
      expect(errorCodes(create)).toEqual(['BAD_USER_INPUT']);
      expect(create.body.errors?.[0]?.extensions?.outcome).toBeUndefined();
    } finally {
      await refused.close();
      await rejecting.close();
      await upstream.close();
    }
  });
});
