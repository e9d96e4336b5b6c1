/**
 * The gateway in front of an upstream that fails: connections refused, reset or cut short in the
 * middle of a body, answers later than PETSTORE_TIMEOUT, keep-alive sockets closed by the server,
 * storms of 5xx, bodies that are not the documented JSON or are too large, and a store that stops
 * and comes back. Every fault gives a clean GraphQL error with UPSTREAM_UNAVAILABLE (or, for a GET
 * whose connection was reset, the answer of its one retry), in time, with no unhandled rejection
 * and no growing number of sockets; createPet is never sent twice.
 */

import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { createRestClient } from '../../../src/gateway/upstream/client.js';
import { UpstreamError } from '../../../src/gateway/upstream/errors.js';
import { BACKOFF_MS } from '../../../src/gateway/upstream/limits/model.js';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import type { Pet } from '../../../src/petstore/store.js';
import { type FaultMode, type FaultProxy, startFaultProxy } from '../../helpers/fault-proxy.js';
import { errorCodes, type GqlResponse } from '../../helpers/gql.js';
import { expectData } from '../../helpers/seeded-pets.js';
import {
  type GatewayUnderTest,
  sendRaw,
  startGateway,
  startUpstream,
  UPSTREAM_KEY,
  type Upstream,
} from '../../helpers/upstream.js';

const TIMEOUT_MS = 300;
/**
 * How late after its deadline an answer may come on a busy 2-core machine: several times the
 * scheduling jitter seen there (up to ~0.5 s), and still far below a hang, which would last until
 * undici's default timeouts (10 s and more).
 */
const MARGIN_MS = 2_500;
/** The REST client's default cap on an upstream body. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

const SEED: readonly Pet[] = [
  { id: 1n, name: 'Ada', categoryId: 1n, status: 'available' },
  { id: 2n, name: 'Bo', categoryId: 2n, status: 'pending' },
  { id: 3n, name: 'Cy', categoryId: 3n, status: 'sold' },
];
const FIRST_TWO = {
  pets: {
    nodes: [
      { id: '1', name: 'Ada' },
      { id: '2', name: 'Bo' },
    ],
  },
};

const PETS = '{ pets(first: 2) { nodes { id name } } }';
const CREATE = 'mutation { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id name } } }';
const PET_JSON = '{"id":1,"name":"Ada","categoryId":1,"status":"available"}';

// Every test ends with no unhandled rejection in this process.
const rejections: unknown[] = [];
const onRejection = (reason: unknown) => {
  rejections.push(reason);
};
beforeAll(() => {
  process.on('unhandledRejection', onRejection);
});
afterEach(async () => {
  await new Promise((resolve) => setImmediate(resolve));
  expect(rejections).toEqual([]);
});
afterAll(() => {
  process.off('unhandledRejection', onRejection);
});

function expectUnavailable(response: GqlResponse<unknown>): void {
  expect(response.status).toBe(200);
  expect(response.body.data).toBeNull();
  expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
  const text = JSON.stringify(response.body);
  expect(text).not.toContain('127.0.0.1');
  expect(text).not.toContain(UPSTREAM_KEY);
  expect(response.body.errors?.[0]?.extensions?.stacktrace).toBeUndefined();
}

async function timed<T>(run: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await run();
  return [value, performance.now() - start];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits until `condition` holds (sockets close asynchronously), up to ten seconds. */
async function eventually(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition() && Date.now() < deadline) await sleep(20);
}

/** `total` operations, `concurrency` at a time, alternating a list and a creation. */
/**
 * `total` operations, `concurrency` at a time, alternating lists and creates. Each list asks for
 * another page size: identical GETs in flight for one key are shared, and a storm should be many requests.
 */
async function storm(gateway: GatewayUnderTest, total: number, concurrency: number): Promise<GqlResponse[]> {
  const responses: GqlResponse[] = [];
  for (let sent = 0; sent < total; sent += concurrency) {
    const round = Array.from({ length: Math.min(concurrency, total - sent) }, (_, i) =>
      gateway.query((sent + i) % 2 === 0 ? `{ pets(first: ${((sent + i) % 100) + 1}) { nodes { id } } }` : CREATE),
    );
    responses.push(...(await Promise.all(round)));
  }
  return responses;
}

describe('through a fault-injecting proxy in front of the reference store', () => {
  let store: PetstoreHandle;
  let proxy: FaultProxy;
  let gateway: GatewayUnderTest;
  /**
   * The same, with the default PETSTORE_TIMEOUT: where the proxy injects no fault nothing may time
   * out, and on a loaded machine a new connection through the proxy to the store can take longer
   * than the 300 ms that ends the faulty modes quickly (seen with the other core held busy).
   */
  let patient: GatewayUnderTest;
  const requests: RequestRecord[] = [];
  const count = (operation: RequestRecord['operation']) => requests.filter((r) => r.operation === operation).length;

  beforeAll(async () => {
    store = await startPetstore({
      keys: { [UPSTREAM_KEY]: { perMinute: 100_000, perDay: 1_000_000 } },
      seed: SEED,
      onRequest: (record) => requests.push(record),
    });
    proxy = await startFaultProxy({ port: store.port });
    gateway = await startGateway(`${proxy.origin}/v1`, { PETSTORE_TIMEOUT: `${TIMEOUT_MS}ms` });
    patient = await startGateway(`${proxy.origin}/v1`);
  });
  afterAll(async () => {
    await patient.close();
    await gateway.close();
    await proxy.close();
    await store.close();
  });
  beforeEach(async () => {
    // A test that failed while the proxy refused connections must not fail the ones after it.
    if (!proxy.listening) await proxy.accept();
    proxy.set('pass');
    proxy.resetStats();
    requests.length = 0;
  });

  it('answers UPSTREAM_UNAVAILABLE at once while connections are refused, and serves again once the upstream listens', async () => {
    await proxy.refuse();
    const [list, listMs] = await timed(() => gateway.query(PETS));
    expectUnavailable(list);
    const [created, createMs] = await timed(() => gateway.query(CREATE));
    expectUnavailable(created);
    expect(listMs).toBeLessThan(MARGIN_MS);
    expect(createMs).toBeLessThan(MARGIN_MS);
    expect(requests).toEqual([]);

    await proxy.accept();
    expectData(await gateway.query(PETS), FIRST_TWO);
  });

  it('sends a GET once more after a reset in the middle of the body, and serves the second answer', async () => {
    proxy.set('reset-mid-body', { times: 1 });
    expectData(await gateway.query(PETS), FIRST_TWO);
    expect(proxy.stats.faulted).toBe(1);
    expect(count('listPets')).toBe(2);
  });

  it.each<FaultMode>(['reset-mid-body', 'truncate-body'])(
    'answers UPSTREAM_UNAVAILABLE after exactly one retry when every answer to a GET is cut (%s)',
    async (mode) => {
      proxy.set(mode);
      expectUnavailable(await gateway.query(PETS));
      expect(count('listPets')).toBe(2);
    },
  );

  it.each<FaultMode>(['reset-mid-body', 'truncate-body'])(
    'never sends createPet twice when its answer is cut (%s): the store holds exactly one new pet',
    async (mode) => {
      const before = store.catalogue.size;
      proxy.set(mode);
      expectUnavailable(await gateway.query(CREATE));
      expect(count('createPet')).toBe(1);
      expect(store.catalogue.size).toBe(before + 1);
    },
  );

  it('answers UPSTREAM_UNAVAILABLE within PETSTORE_TIMEOUT when answers come later, and sends the GET once', async () => {
    proxy.set('latency', { latencyMs: TIMEOUT_MS + 2 * MARGIN_MS });
    const [response, ms] = await timed(() => gateway.query(PETS));
    expectUnavailable(response);
    expect(response.body.errors?.[0]?.message).toBe('the Pet Store did not answer in time');
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 10);
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    expect(count('listPets')).toBe(1);
  });

  it('never sends createPet twice after a timeout: once the late answer is due, the store holds exactly one new pet', async () => {
    const before = store.catalogue.size;
    proxy.set('latency', { latencyMs: 2 * TIMEOUT_MS });
    const [response, ms] = await timed(() => gateway.query(CREATE));
    expectUnavailable(response);
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    // The late POST reaches the store; a resend, had there been one, would have followed the timeout at once.
    await eventually(() => count('createPet') >= 1);
    await sleep(2 * TIMEOUT_MS);
    expect(count('createPet')).toBe(1);
    expect(store.catalogue.size).toBe(before + 1);
  });

  it('sends a GET again when a kept-alive connection is reset as the request arrives, and serves the retry', async () => {
    expectData(await gateway.query(PETS), FIRST_TWO); // leaves a connection in the pool
    requests.length = 0;
    proxy.set('reset-reused', { times: 1 });
    expectData(await gateway.query(PETS), FIRST_TWO);
    expect(proxy.stats.faulted).toBe(1);
    expect(count('listPets')).toBe(1);
  });

  it('never resends createPet when a kept-alive connection is reset as the request arrives', async () => {
    expectData(await gateway.query(PETS), FIRST_TWO);
    requests.length = 0;
    const before = store.catalogue.size;
    proxy.set('reset-reused', { times: 1 });
    expectUnavailable(await gateway.query(CREATE));
    expect(proxy.stats.faulted).toBe(1);
    // The store never saw it: nothing was created, and the client may safely try again.
    expect(count('createPet')).toBe(0);
    expect(store.catalogue.size).toBe(before);
    expect((await gateway.query(CREATE)).body.errors).toBeUndefined();
  });

  it('serves every request when the upstream closes each keep-alive connection after its answer, one connection each', async () => {
    proxy.set('close-after-response');
    const responses = await storm(patient, 50, 1);
    expect(responses.flatMap((response) => response.body.errors ?? [])).toEqual([]);
    expect(count('listPets')).toBe(25);
    expect(count('createPet')).toBe(25);
    expect(proxy.stats.opened).toBeLessThanOrEqual(50);
    await eventually(() => proxy.stats.open === 0);
    expect(proxy.stats.open).toBe(0);
  });

  it.each<[FaultMode, number]>([
    ['pass', 20],
    ['close-after-response', 100],
    ['reset-mid-body', 150],
    ['truncate-body', 150],
    ['latency', 100],
  ])('keeps its sockets bounded across 50 requests, 10 at a time (%s)', async (mode, maxOpened) => {
    proxy.set(mode, { latencyMs: 2 * TIMEOUT_MS });
    const faultless = mode === 'pass' || mode === 'close-after-response';
    const [responses, ms] = await timed(() => storm(faultless ? patient : gateway, 50, 10));
    expect(responses.every((response) => response.status === 200)).toBe(true);
    if (faultless) {
      expect(responses.flatMap((response) => response.body.errors ?? [])).toEqual([]);
    } else {
      expect(new Set(responses.flatMap(errorCodes))).toEqual(new Set(['UPSTREAM_UNAVAILABLE']));
    }
    // undici's pool may open a connection ahead of need, so opened is bounded by twice the requests
    // sent upstream (one retry per GET included); a leak would keep one socket open per request.
    expect(proxy.stats.opened).toBeLessThanOrEqual(maxOpened);
    await eventually(() => proxy.stats.open <= 20);
    expect(proxy.stats.open).toBeLessThanOrEqual(20);
    expect(ms).toBeLessThan(5 * (TIMEOUT_MS + MARGIN_MS));
  });
});

describe('a reference store that stops and comes back on the same port', () => {
  it('answers UPSTREAM_UNAVAILABLE while the store is down and recovers by itself once it is back', async () => {
    const keys = { [UPSTREAM_KEY]: { perMinute: 100_000, perDay: 1_000_000 } };
    let store = await startPetstore({ keys, seed: SEED });
    const gateway = await startGateway(store.url, { PETSTORE_TIMEOUT: `${TIMEOUT_MS}ms` });
    try {
      expectData(await gateway.query(PETS), FIRST_TWO);
      await store.close();
      for (const operation of [PETS, CREATE, '{ pet(id: "1") { id } }']) {
        const [response, ms] = await timed(() => gateway.query(operation));
        expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
        expect(ms).toBeLessThan(MARGIN_MS);
      }
      store = await startPetstore({ keys, seed: SEED, port: store.port });
      expectData(await gateway.query(PETS), FIRST_TWO);
      expect((await gateway.query(CREATE)).body.data).toEqual({ createPet: { pet: { id: '4', name: 'Rex' } } });
    } finally {
      await gateway.close();
      await store.close();
    }
  });
});

describe('through the proxy in front of an upstream that answers badly', () => {
  let upstream: Upstream;
  let proxy: FaultProxy;
  let gateway: GatewayUnderTest;
  let answer: (res: ServerResponse, n: number, method: string) => void = () => {};

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => answer(res, upstream.requests.length, req.method ?? ''));
    proxy = await startFaultProxy({ port: Number(new URL(upstream.origin).port) });
    gateway = await startGateway(`${proxy.origin}/v1`, { PETSTORE_TIMEOUT: `${TIMEOUT_MS}ms` });
  });
  afterAll(async () => {
    await gateway.close();
    await proxy.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
    proxy.resetStats();
  });

  it('answers a storm of 500, 502 and 503 with UPSTREAM_UNAVAILABLE, never retrying, on kept-alive connections', async () => {
    const statuses = [500, 502, 503];
    answer = (res, n) => {
      const status = statuses[n % 3] as number;
      if (status === 502) sendRaw(res, status, '<html>Bad Gateway</html>', { 'content-type': 'text/html' });
      else sendRaw(res, status, JSON.stringify({ code: 'server_error', message: 'try later', status }));
    };
    const responses = await storm(gateway, 50, 10);
    for (const response of responses) expectUnavailable(response);
    expect(upstream.requests).toHaveLength(50);
    // Ten at a time on kept-alive connections: ten are opened. An answer later than the 300 ms
    // timeout (a loaded machine) aborts its request, and so its connection: one more each.
    const timedOut = responses.filter((response) =>
      /did not answer in time/.test(response.body.errors?.[0]?.message ?? ''),
    );
    expect(proxy.stats.opened).toBeLessThanOrEqual(10 + timedOut.length);
  });

  it.each([
    ['an HTML page with a 200', 200, '<html>maintenance</html>', 'text/html'],
    ['JSON that does not parse', 200, '[{"id":1,', 'application/json'],
    ['an object instead of Pets', 200, `{"pets":[${PET_JSON}]}`, 'application/json'],
    ['a pet whose name is a number', 200, '[{"id":1,"name":7,"categoryId":1}]', 'application/json'],
    ['a pet whose id is a fraction', 200, '[{"id":1.5,"name":"Ada","categoryId":1}]', 'application/json'],
    ['null', 200, 'null', 'application/json'],
  ])('answers a list answered with %s with UPSTREAM_UNAVAILABLE, sent once', async (_label, status, body, type) => {
    answer = (res) => sendRaw(res, status, body, { 'content-type': type });
    expectUnavailable(await gateway.query(PETS));
    expect(upstream.requests).toHaveLength(1);
  });

  it.each([
    ['a Pets array', `[${PET_JSON}]`],
    ['a pet without a categoryId', '{"id":9,"name":"Rex"}'],
    ['text', 'created'],
  ])('answers createPet answered 201 with %s with UPSTREAM_UNAVAILABLE, sent once', async (_label, body) => {
    answer = (res) => sendRaw(res, 201, body);
    expectUnavailable(await gateway.query(CREATE));
    expect(upstream.requests.map((request) => request.method)).toEqual(['POST']);
  });

  it('refuses a declared body over the 8 MiB cap', async () => {
    const body = `[${Array.from({ length: MAX_BODY_BYTES / PET_JSON.length + 1 }, () => PET_JSON).join(',')}]`;
    answer = (res) => sendRaw(res, 200, body);
    expectUnavailable(await gateway.query(PETS));
    expect(upstream.requests).toHaveLength(1);
  });

  it('stops reading an endless chunked body at the cap and hangs up', async () => {
    const chunk = Buffer.alloc(64 * 1024, ' ');
    let written = 0;
    let hungUp = false;
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.on('close', () => {
        hungUp = true;
      });
      const write = () => {
        let more = true;
        while (!res.destroyed && more) {
          more = res.write(chunk);
          written += chunk.length;
        }
        if (!res.destroyed) res.once('drain', write);
      };
      res.write('[');
      write();
    };
    const [response, ms] = await timed(() => gateway.query(PETS));
    expectUnavailable(response);
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    await eventually(() => hungUp);
    expect(hungUp).toBe(true);
    expect(written).toBeGreaterThan(MAX_BODY_BYTES / 2);
  });

  it('gives up on a body trickled so slowly that it is not complete at PETSTORE_TIMEOUT', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('[');
      const timer = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(timer));
    };
    const [response, ms] = await timed(() => gateway.query(PETS));
    expectUnavailable(response);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 10);
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
  });

  it('bounds a GET and its retry together by PETSTORE_TIMEOUT', async () => {
    const late = TIMEOUT_MS - 100;
    answer = (res, n) => {
      // First attempt: the connection dies late; the retry would answer only after the deadline.
      if (n === 1) setTimeout(() => res.socket?.destroy(), late);
      else setTimeout(() => sendRaw(res, 200, `[${PET_JSON}]`), late);
    };
    // A gateway of its own: on a loaded machine the storm above may time out, and a request with no
    // answer backs its key off for a second or more, which this one would wait out first.
    const fresh = await startGateway(`${proxy.origin}/v1`, { PETSTORE_TIMEOUT: `${TIMEOUT_MS}ms` });
    try {
      const [response, ms] = await timed(() => fresh.query(PETS));
      expectUnavailable(response);
      expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
      expect(upstream.requests).toHaveLength(2);
    } finally {
      await fresh.close();
    }
  });

  it('does not back the key off for a body that was too slow: the upstream answered', async () => {
    answer = (res, n) => {
      if (n > 1) return sendRaw(res, 200, `[${PET_JSON}]`);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('[');
    };
    const fresh = await startGateway(`${proxy.origin}/v1`, { PETSTORE_TIMEOUT: `${TIMEOUT_MS}ms` });
    try {
      expectUnavailable(await fresh.query(PETS));
      // A request with no answer at all pauses the key for a second at least (BACKOFF_MS); this one
      // had its answer's headers, so the next request goes at once.
      const [response, ms] = await timed(() => fresh.query(PETS));
      expect(response.body.errors).toBeUndefined();
      expect(ms).toBeLessThan(BACKOFF_MS - 100);
      expect(upstream.requests).toHaveLength(2);
    } finally {
      await fresh.close();
    }
  });
});

describe('createRestClient maxBodyBytes', () => {
  it('reads a body up to maxBodyBytes and refuses a larger one, declared or chunked', async () => {
    const small = `[${PET_JSON}]`;
    const large = `[${Array.from({ length: 20 }, () => PET_JSON).join(',')}]`;
    const upstream = await startUpstream((req, res) => {
      const body = req.url?.includes('limit=1') ? small : large;
      if (req.url?.includes('status=sold')) {
        res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no length declared
        res.end(body);
      } else sendRaw(res, 200, body);
    });
    const client = createRestClient({
      baseUrl: `${upstream.origin}/v1`,
      timeoutMs: TIMEOUT_MS,
      logger: createLogger('silent'),
      maxBodyBytes: 512,
    });
    try {
      expect(small.length).toBeLessThan(512);
      expect(large.length).toBeGreaterThan(512);
      const page = await client.listPets(UPSTREAM_KEY, client.petsUrl({ limit: 1 }));
      expect(page.pets).toHaveLength(1);
      for (const url of [client.petsUrl({ limit: 20 }), client.petsUrl({ limit: 20, status: 'sold' })]) {
        const failure = await client.listPets(UPSTREAM_KEY, url).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(UpstreamError);
        expect(failure).toMatchObject({
          code: 'UNAVAILABLE',
          message: 'the Pet Store answered a body larger than allowed',
        });
      }
    } finally {
      await client.close();
      await upstream.close();
    }
  });
});

describe('createRestClient bodies', () => {
  it('reads a body sent in pieces that split a character, and one that starts with a byte order mark', async () => {
    const body = Buffer.from('[{"id":1,"name":"Zoë","categoryId":1,"status":"available"}]');
    const split = body.indexOf(Buffer.from('ë')) + 1; // between the two bytes of ë
    const upstream = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.includes('status=sold')) return void res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]));
      res.write(body.subarray(0, split));
      setTimeout(() => res.end(body.subarray(split)), 20);
    });
    const client = createRestClient({
      baseUrl: `${upstream.origin}/v1`,
      timeoutMs: 5_000,
      logger: createLogger('silent'),
    });
    try {
      for (const url of [client.petsUrl({ limit: 1 }), client.petsUrl({ limit: 1, status: 'sold' })]) {
        const page = await client.listPets(UPSTREAM_KEY, url);
        expect(page.pets.map((pet) => pet.name)).toEqual(['Zoë']);
      }
    } finally {
      await client.close();
      await upstream.close();
    }
  });
});

describe.each([
  ['the free plan', '60/1m,1000/1d'],
  ['no plan (PETSTORE_RATE_LIMITS=off)', 'off'],
])('an upstream that accepts requests and never answers, on %s', (_name, limits) => {
  it('answers the requests waiting behind the unanswered ones UPSTREAM_UNAVAILABLE, not RATE_LIMITED', async () => {
    // Issue 44: 60 concurrent queries, PETSTORE_MAX_WAIT=3s, PETSTORE_TIMEOUT=2s gave 58 RATE_LIMITED.
    const upstream = await startUpstream(() => {});
    const gateway = await startGateway(`${upstream.origin}/v1`, {
      PETSTORE_MAX_WAIT: '3s',
      PETSTORE_TIMEOUT: '2s',
      PETSTORE_RATE_LIMITS: limits,
    });
    try {
      const [responses, ms] = await timed(() =>
        Promise.all(Array.from({ length: 60 }, (_, i) => gateway.query(`{ pets(first: ${i + 1}) { nodes { id } } }`))),
      );
      const messages = responses.map((response) => `${errorCodes(response)}: ${response.body.errors?.[0]?.message}`);
      expect(new Set(responses.flatMap(errorCodes)), messages.join('\n')).toEqual(new Set(['UPSTREAM_UNAVAILABLE']));
      for (const response of responses) expectUnavailable(response);
      // Every one within PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT.
      expect(ms).toBeLessThan(5_000 + MARGIN_MS);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  }, 20_000);
});
