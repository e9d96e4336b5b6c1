/**
 * The error codes the gateway gives for what an upstream does wrong, end to end over real HTTP: the
 * reference Pet Store on port 0 for its 429, and a stand-in upstream on port 0
 * (test/helpers/upstream.ts) for what the reference store never does (5xx, bodies that are not JSON
 * or not Pets, closed connections, silence), which the gateway must still answer safely.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GqlResponse } from '../../helpers/gql.js';
import { callStore } from '../../helpers/petstore-client.js';
import { CREATE, expectData, onlyError, PET, PETS, SEED } from '../../helpers/seeded-pets.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';
import {
  type GatewayUnderTest,
  refusedBaseUrl,
  sendRaw,
  startGateway,
  startUpstream,
  UPSTREAM_KEY,
  type Upstream,
} from '../../helpers/upstream.js';

describe('RATE_LIMITED from an upstream 429', () => {
  // A fixed store clock 15 s into a minute: the store's minute window then ends in exactly 45 s.
  const STORE_NOW = Math.floor(Date.now() / 60_000) * 60_000 + 15_000;
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({
      store: { seed: SEED, keys: { [TEST_KEY]: { perMinute: 1, perDay: 1_000 } }, now: () => STORE_NOW },
      env: { PETSTORE_RATE_LIMITS: 'off', PETSTORE_MAX_WAIT: '10s' },
    });
  });
  afterAll(() => stack.close());

  it('answers with RATE_LIMITED and retryAfter in seconds from the Retry-After header', async () => {
    // The key's one request this minute, spent directly at the store so the gateway knows nothing of it.
    const direct = await callStore(stack.store.url, '/pets?limit=1', { key: TEST_KEY });
    expect(direct.status).toBe(200);
    stack.requests.length = 0;

    const response = await stack.query(PETS, { variables: { first: 2 } });
    expect(response.status).toBe(200);
    expect(response.body.data).toBeNull();
    const error = onlyError(response, 'RATE_LIMITED');
    expect(error.extensions?.retryAfter).toBe(45);
    // One 429, not retried: a retry within the minute could only count towards a ban.
    expect(stack.requests).toEqual([expect.objectContaining({ operation: 'listPets', status: 429 })]);
  });
});

describe('UPSTREAM_UNAVAILABLE', () => {
  let upstream: Upstream | undefined;
  let gateway: GatewayUnderTest | undefined;

  afterEach(async () => {
    await gateway?.close();
    await upstream?.close();
    gateway = undefined;
    upstream = undefined;
  });

  function expectUnavailable(response: GqlResponse<unknown>): void {
    expect(response.status).toBe(200);
    const error = onlyError(response, 'UPSTREAM_UNAVAILABLE');
    // Nothing of the upstream's address or the key leaks to the client.
    const text = JSON.stringify(response.body);
    expect(text).not.toContain('127.0.0.1');
    expect(text).not.toContain(UPSTREAM_KEY);
    expect(error.extensions?.stacktrace).toBeUndefined();
  }

  it('answers a query against a reference store that was closed (connection refused)', async () => {
    const stack = await startStack({ store: { seed: SEED } });
    await stack.store.close();
    try {
      const response = await stack.query(PETS, { variables: { first: 2 } });
      expect(response.body.data).toBeNull();
      expectUnavailable(response);
      const lookup = await stack.query(PET, { variables: { id: '1' } });
      expect(lookup.body.data).toEqual({ pet: null });
      expectUnavailable(lookup);
    } finally {
      await stack.gateway.close();
    }
  });

  it('answers a mutation against an address where nothing listens', async () => {
    gateway = await startGateway(await refusedBaseUrl());
    const response = await gateway.query(CREATE, { variables: { input: { name: 'Rex', categoryId: '1' } } });
    expect(response.body.data).toBeNull();
    expectUnavailable(response);
  });

  it.each([500, 502, 503, 504])('answers an upstream %i with an Error body', async (status) => {
    upstream = await startUpstream((_req, res) =>
      sendRaw(res, status, JSON.stringify({ code: 'server_error', message: 'try later', status })),
    );
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query(PETS, { variables: { first: 2 } });
    expect(response.body.data).toBeNull();
    expectUnavailable(response);
  });

  it.each([
    ['an HTML error page with a 502', 502, '<html><body>Bad Gateway</body></html>', 'text/html'],
    ['a 200 that is not JSON', 200, '<html>maintenance</html>', 'text/html'],
    ['a 200 with truncated JSON', 200, '[{"id":1,"name":"Rex","categoryId":1', 'application/json'],
    ['a 200 with an object instead of Pets', 200, '{"pets":[]}', 'application/json'],
    ['a 200 with a pet missing its id', 200, '[{"name":"Rex","categoryId":1}]', 'application/json'],
    [
      'a 200 with an id beyond int64',
      200,
      '[{"id":9223372036854775808,"name":"Rex","categoryId":1}]',
      'application/json',
    ],
    ['a 200 with an empty body', 200, '', 'application/json'],
  ])('answers %s', async (_label, status, body, type) => {
    upstream = await startUpstream((_req, res) => sendRaw(res, status, body, { 'content-type': type }));
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query(PETS, { variables: { first: 2 } });
    expect(response.body.data).toBeNull();
    expectUnavailable(response);
    expect(upstream.requests).toHaveLength(1);
  });

  it('answers createPet whose 201 body is not a Pet, and does not send it twice', async () => {
    upstream = await startUpstream((_req, res) => sendRaw(res, 201, 'created', { 'content-type': 'text/plain' }));
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query(CREATE, { variables: { input: { name: 'Rex', categoryId: '1' } } });
    expectUnavailable(response);
    expect(upstream.requests.map((request) => request.method)).toEqual(['POST']);
  });

  it('never retries createPet after a 5xx, so a pet is never created twice', async () => {
    upstream = await startUpstream((_req, res) =>
      sendRaw(res, 503, JSON.stringify({ code: 'unavailable', message: 'down', status: 503 })),
    );
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query(CREATE, { variables: { input: { name: 'Rex', categoryId: '1' } } });
    expectUnavailable(response);
    expect(upstream.requests.map((request) => request.method)).toEqual(['POST']);
  });

  it('never retries createPet after the connection was closed without an answer', async () => {
    upstream = await startUpstream((req) => req.socket.destroy());
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query(CREATE, { variables: { input: { name: 'Rex', categoryId: '1' } } });
    expectUnavailable(response);
    expect(upstream.requests.map((request) => request.method)).toEqual(['POST']);
  });

  it('sends a GET once more when the connection was closed without an answer, and serves the retry', async () => {
    let calls = 0;
    upstream = await startUpstream((req, res) => {
      calls++;
      if (calls === 1) req.socket.destroy();
      else sendRaw(res, 200, '[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]');
    });
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query('{ pets(first: 1) { nodes { id name } } }');
    expectData(response, { pets: { nodes: [{ id: '1', name: 'Rex' }] } });
    expect(upstream.requests).toHaveLength(2);
  });

  it('answers an upstream that does not answer within PETSTORE_TIMEOUT', async () => {
    upstream = await startUpstream(() => {
      // Never answers; the socket is closed with the server.
    });
    gateway = await startGateway(`${upstream.origin}/v1`, { PETSTORE_TIMEOUT: '150ms' });
    const response = await gateway.query(PETS, { variables: { first: 2 } });
    expect(response.body.data).toBeNull();
    expectUnavailable(response);
  });

  it('answers an upstream 400 from a stricter upstream with BAD_USER_INPUT and its Error body', async () => {
    upstream = await startUpstream((_req, res) =>
      sendRaw(res, 400, JSON.stringify({ code: 'name_taken', message: 'a pet named Rex exists', status: 400 })),
    );
    gateway = await startGateway(`${upstream.origin}/v1`);
    const response = await gateway.query(CREATE, { variables: { input: { name: 'Rex', categoryId: '1' } } });
    expect(response.body.data).toBeNull();
    const error = onlyError(response, 'BAD_USER_INPUT');
    expect(error.extensions?.upstream).toEqual({ code: 'name_taken', message: 'a pet named Rex exists', status: 400 });
    expect(upstream.requests).toHaveLength(1);
  });
});
