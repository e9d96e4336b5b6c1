/**
 * The reference Pet Store over real HTTP (port 0): every row of the spec's endpoint, error and
 * authentication tables, the store's choices in docs/rest-interface.md, and int64 ids above 2^53.
 */

import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import type { Pet, PetStatus } from '../../../src/petstore/store.js';
import {
  callStore,
  expectError,
  expectPet,
  expectPets,
  type ParsedPet,
  type PetstoreClient,
  parseJson,
  petstoreClient,
  type StoreResponse,
} from '../../helpers/petstore-client.js';

/** An enterprise key: these tests send far more than a free plan's 60 requests a minute. */
const KEY = 'integration-test-key';
const STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold'];
const DEPRECATION = '@1735689600';
const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';

/** Pets 1..count; statuses cycle available, pending, sold (so pet 3k is sold). */
function seedPets(count: number): Pet[] {
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: BigInt((i % 4) + 1),
    status: STATUSES[i % 3] as PetStatus,
  }));
}

function start(seed: Iterable<Pet>, extra: { maxBodyBytes?: number } = {}): Promise<PetstoreHandle> {
  return startPetstore({ keys: { [KEY]: 'enterprise' }, seed, ...extra });
}

/** The scheme://host:port the store's Link headers are built on. */
function originOf(store: PetstoreHandle): string {
  return store.url.replace(/\/v1$/, '');
}

/** The target of a `Link: <…>; rel="next"` header, or undefined when there is none. */
function nextLink(response: StoreResponse): string | undefined {
  const link = response.headers.get('link');
  if (link === null) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(match, `Link header ${link}`).not.toBeNull();
  return match?.[1];
}

/** Follows rel="next" from `path` to the last page; returns every page's pets and the links followed. */
async function walkPages(client: PetstoreClient, path: string): Promise<{ pages: ParsedPet[][]; links: string[] }> {
  const pages: ParsedPet[][] = [];
  const links: string[] = [];
  let target: string | undefined = path;
  while (target !== undefined) {
    const response = await client.get(target);
    pages.push(expectPets(response));
    target = nextLink(response);
    if (target !== undefined) links.push(target);
    expect(pages.length).toBeLessThan(200);
  }
  return { pages, links };
}

function ids(pets: readonly ParsedPet[]): bigint[] {
  return pets.map((pet) => pet.id);
}

function range(from: number, to: number): bigint[] {
  return Array.from({ length: to - from + 1 }, (_, i) => BigInt(from + i));
}

describe('GET /v1/pets', () => {
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeAll(async () => {
    store = await start(seedPets(45));
    client = petstoreClient(store.url, KEY);
  });
  afterAll(() => store.close());

  it('returns the first 20 pets in id order by default, with a Link to the next page', async () => {
    const response = await client.get('/pets');
    const pets = expectPets(response);
    expect(ids(pets)).toEqual(range(1, 20));
    expect(pets[0]).toEqual({ id: 1n, name: 'Pet 1', categoryId: 1n, status: 'available' });
    expect(response.headers.get('link')).toBe(`<${originOf(store)}/v1/pets?limit=20&after=20>; rel="next"`);
  });

  it.each([
    [1, range(1, 1)],
    [7, range(1, 7)],
    [20, range(1, 20)],
    [44, range(1, 44)],
  ])('honours limit=%i and links to the rest', async (limit, expected) => {
    const response = await client.get(`/pets?limit=${limit}`);
    expect(ids(expectPets(response))).toEqual(expected);
    expect(nextLink(response)).toBe(`${originOf(store)}/v1/pets?limit=${limit}&after=${limit}`);
  });

  it('returns everything without a Link when limit covers the whole catalogue', async () => {
    for (const limit of [45, 100]) {
      const response = await client.get(`/pets?limit=${limit}`);
      expect(ids(expectPets(response))).toEqual(range(1, 45));
      expect(response.headers.get('link')).toBeNull();
    }
  });

  it.each(STATUSES)('filters by status=%s', async (status) => {
    const response = await client.get(`/pets?status=${status}&limit=100`);
    const pets = expectPets(response);
    expect(pets).toHaveLength(15);
    expect(pets.every((pet) => pet.status === status)).toBe(true);
    const offset = STATUSES.indexOf(status) + 1;
    expect(ids(pets)).toEqual(Array.from({ length: 15 }, (_, i) => BigInt(offset + 3 * i)));
    expect(response.headers.get('link')).toBeNull();
  });

  it('follows Link rel="next" to the last page, seeing every pet exactly once and no Link on the last page', async () => {
    const { pages, links } = await walkPages(client, '/pets?limit=7');
    expect(pages.map((page) => page.length)).toEqual([7, 7, 7, 7, 7, 7, 3]);
    expect(pages.flat().map((pet) => pet.id)).toEqual(range(1, 45));
    expect(links).toEqual([7, 14, 21, 28, 35, 42].map((after) => `${originOf(store)}/v1/pets?limit=7&after=${after}`));
  });

  it('follows Link rel="next" with the default limit', async () => {
    const { pages } = await walkPages(client, '/pets');
    expect(pages.map((page) => page.length)).toEqual([20, 20, 5]);
    expect(pages.flat().map((pet) => pet.id)).toEqual(range(1, 45));
  });

  it('keeps the status filter in the Link and ends without a Link when the last page is exactly full', async () => {
    const { pages, links } = await walkPages(client, '/pets?status=sold&limit=5');
    expect(pages.map((page) => page.length)).toEqual([5, 5, 5]);
    const all = pages.flat();
    expect(ids(all)).toEqual(Array.from({ length: 15 }, (_, i) => BigInt(3 * (i + 1))));
    expect(new Set(ids(all)).size).toBe(15);
    expect(links).toEqual([
      `${originOf(store)}/v1/pets?limit=5&status=sold&after=15`,
      `${originOf(store)}/v1/pets?limit=5&status=sold&after=30`,
    ]);
  });

  it('ends without a Link when only pets of another status follow the last page', async () => {
    // Pet 43 is the last available one; 44 (pending) and 45 (sold) follow it.
    const response = await client.get('/pets?status=available&limit=5&after=28');
    expect(ids(expectPets(response))).toEqual([31n, 34n, 37n, 40n, 43n]);
    expect(response.headers.get('link')).toBeNull();
  });

  it('starts after the `after` cursor, which need not be an existing id', async () => {
    expect(ids(expectPets(await client.get('/pets?after=40')))).toEqual(range(41, 45));
    expect(ids(expectPets(await client.get('/pets?after=0&limit=2')))).toEqual([1n, 2n]);
    const past = await client.get('/pets?after=45');
    expect(expectPets(past)).toEqual([]);
    expect(past.text).toBe('[]');
    expect(past.headers.get('link')).toBeNull();
  });

  it.each([
    ['limit=0'],
    ['limit=101'],
    ['limit=abc'],
    ['limit=1.5'],
    ['limit=-1'],
    ['limit='],
    ['limit=1e1'],
    ['status=adopted'],
    ['status=Available'],
    ['status='],
    ['after=abc'],
    ['after=9223372036854775808'],
    ['limit=5&limit=6'],
    ['limit=5&limit=5'],
    ['status=sold&status=pending'],
    ['after=1&after=2'],
  ])('rejects ?%s with 400 invalid_request', async (query) => {
    const response = await client.get(`/pets?${query}`);
    expectError(response, 400, 'invalid_request');
    expect(response.headers.get('link')).toBeNull();
  });
});

describe('POST /v1/pets', () => {
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeAll(async () => {
    store = await start(seedPets(3));
    client = petstoreClient(store.url, KEY);
  });
  afterAll(() => store.close());

  it('creates a pet with 201, the next id, a Location and status available by default', async () => {
    const response = await client.post('/pets', JSON.stringify({ name: 'Rex', categoryId: 2 }));
    expect(response.status).toBe(201);
    const pet = expectPet(response);
    expect(pet).toEqual({ id: 4n, name: 'Rex', categoryId: 2n, status: 'available' });
    expect(response.headers.get('location')).toBe('/v1/pets/4');

    const fetched = await client.get('/pets/4');
    expect(fetched.status).toBe(200);
    expect(expectPet(fetched)).toEqual(pet);
    const listed = expectPets(await client.get('/pets?after=3'));
    expect(listed).toEqual([pet]);
  });

  it.each(STATUSES)('keeps a given status=%s', async (status) => {
    const response = await client.post('/pets', JSON.stringify({ name: `A ${status} pet`, categoryId: 1, status }));
    expect(response.status).toBe(201);
    const pet = expectPet(response);
    expect(pet.status).toBe(status);
    expect(response.headers.get('location')).toBe(`/v1/pets/${pet.id}`);
    expect(expectPet(await client.get(`/pets/${pet.id}`))).toEqual(pet);
  });

  it('accepts names of 1 and 200 characters, counting characters rather than UTF-16 units', async () => {
    for (const name of ['R', 'n'.repeat(200), '🐕'.repeat(200), '  Rex  ']) {
      const response = await client.post('/pets', JSON.stringify({ name, categoryId: 1 }));
      expect(response.status, name).toBe(201);
      expect(expectPet(response).name).toBe(name);
    }
  });

  it('ignores unknown fields and never takes the id from the body', async () => {
    const response = await client.post('/pets', '{"id":1,"name":"Copy","categoryId":3,"colour":"grey"}');
    expect(response.status).toBe(201);
    const pet = expectPet(response);
    expect(pet.id).not.toBe(1n);
    expect(pet).toEqual({ id: pet.id, name: 'Copy', categoryId: 3n, status: 'available' });
  });

  it.each([
    ['name is missing', '{"categoryId":1}'],
    ['name is empty', '{"name":"","categoryId":1}'],
    ['name is white space only', '{"name":" \\t\\n ","categoryId":1}'],
    ['name is longer than 200 characters', JSON.stringify({ name: 'n'.repeat(201), categoryId: 1 })],
    ['name is a number', '{"name":42,"categoryId":1}'],
    ['name is null', '{"name":null,"categoryId":1}'],
    ['name is an array', '{"name":["Rex"],"categoryId":1}'],
    ['categoryId is missing', '{"name":"Rex"}'],
    ['categoryId is a string', '{"name":"Rex","categoryId":"1"}'],
    ['categoryId is null', '{"name":"Rex","categoryId":null}'],
    ['categoryId is negative', '{"name":"Rex","categoryId":-1}'],
    ['categoryId is zero', '{"name":"Rex","categoryId":0}'],
    ['categoryId is 1.5', '{"name":"Rex","categoryId":1.5}'],
    ['categoryId overflows int64 (2^63)', '{"name":"Rex","categoryId":9223372036854775808}'],
    ['categoryId is far beyond int64', '{"name":"Rex","categoryId":123456789012345678901234567890}'],
    ['status is unknown', '{"name":"Rex","categoryId":1,"status":"adopted"}'],
    ['status is a number', '{"name":"Rex","categoryId":1,"status":1}'],
    ['status is null', '{"name":"Rex","categoryId":1,"status":null}'],
    ['name hides in __proto__', '{"__proto__":{"name":"Rex","categoryId":1}}'],
    ['body is not JSON', '{"name":"Rex",'],
    ['body has bytes after the JSON', '{"name":"Rex","categoryId":1} x'],
    ['body is plain text', 'name=Rex&categoryId=1'],
    ['body is empty', ''],
    ['body is a JSON array', '[{"name":"Rex","categoryId":1}]'],
    ['body is JSON null', 'null'],
    ['body is a JSON number', '42'],
    ['body is a JSON string', '"Rex"'],
    ['body is JSON true', 'true'],
  ])('rejects a body where %s with 400 invalid_request and creates nothing', async (_case, body) => {
    const before = store.catalogue.size;
    const response = await client.post('/pets', body);
    expectError(response, 400, 'invalid_request');
    expect(response.headers.get('location')).toBeNull();
    expect(store.catalogue.size).toBe(before);
  });

  it('accepts a body of exactly 16 KiB and rejects one byte more with 413 payload_too_large', async () => {
    const body = (padding: number) => `{"name":"Big","categoryId":1}${' '.repeat(padding)}`;
    const fits = body(16 * 1024 - body(0).length);
    expect(Buffer.byteLength(fits)).toBe(16 * 1024);
    expect((await client.post('/pets', fits)).status).toBe(201);

    const before = store.catalogue.size;
    const tooLarge = await client.post('/pets', `${fits} `);
    expectError(tooLarge, 413, 'payload_too_large');
    expect(store.catalogue.size).toBe(before);
    // The store still serves afterwards.
    expect((await client.get('/pets?limit=1')).status).toBe(200);
  });
});

describe('POST /v1/pets with a small maxBodyBytes', () => {
  let store: PetstoreHandle;

  beforeAll(async () => {
    store = await start(seedPets(1), { maxBodyBytes: 100 });
  });
  afterAll(() => store.close());

  it('rejects a declared Content-Length over the limit with 413 payload_too_large', async () => {
    const response = await callStore(store.url, '/pets', {
      key: KEY,
      body: JSON.stringify({ name: 'x'.repeat(1_000_000), categoryId: 1 }),
    });
    expectError(response, 413, 'payload_too_large');
    expect(store.catalogue.size).toBe(1);
  });

  it('rejects a chunked body that grows over the limit with 413 payload_too_large', async () => {
    const chunk = new TextEncoder().encode(`{"name":"${'y'.repeat(60)}`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(chunk);
        controller.close();
      },
    });
    const response = await fetch(`${store.url}/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expectError(
      { status: response.status, headers: response.headers, text: await response.text() },
      413,
      'payload_too_large',
    );
    expect(store.catalogue.size).toBe(1);
    expect((await callStore(store.url, '/pets/1', { key: KEY })).status).toBe(200);
  });
});

describe('GET /v1/pets/{petId}', () => {
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeAll(async () => {
    store = await start(seedPets(5));
    client = petstoreClient(store.url, KEY);
  });
  afterAll(() => store.close());

  function expectDeprecated(response: StoreResponse): void {
    expect(response.headers.get('deprecation')).toBe(DEPRECATION);
    expect(response.headers.get('sunset')).toBe(SUNSET);
  }

  it('returns the pet with 200 and the Deprecation and Sunset headers', async () => {
    const response = await client.get('/pets/2');
    expect(response.status).toBe(200);
    expect(expectPet(response)).toEqual({ id: 2n, name: 'Pet 2', categoryId: 2n, status: 'pending' });
    expect(response.text).toBe('{"id":2,"name":"Pet 2","categoryId":2,"status":"pending"}');
    expectDeprecated(response);
    expect(response.headers.get('link')).toBe('</v1/pets>; rel="successor-version"');
  });

  it('keeps the deprecated endpoint consistent with the list', async () => {
    const listed = expectPets(await client.get('/pets?limit=100'));
    for (const pet of listed) expect(expectPet(await client.get(`/pets/${pet.id}`))).toEqual(pet);
  });

  it.each(['6', '0', '-1', '999999', '9223372036854775807', '-9223372036854775808'])(
    'answers 404 not_found for the absent id %s, still deprecated',
    async (id) => {
      const response = await client.get(`/pets/${id}`);
      expectError(response, 404, 'not_found');
      expectDeprecated(response);
    },
  );

  it.each(['abc', '1.5', '1e3', '+1', '0x10', '9223372036854775808', '-9223372036854775809', '99999999999999999999'])(
    'answers 400 invalid_request for the non-int64 id %s, still deprecated',
    async (id) => {
      const response = await client.get(`/pets/${id}`);
      expectError(response, 400, 'invalid_request');
      expectDeprecated(response);
    },
  );
});

describe('authentication', () => {
  let store: PetstoreHandle;

  beforeAll(async () => {
    store = await start(seedPets(2));
  });
  afterAll(() => store.close());

  const operations = [
    ['GET /v1/pets', 'GET', '/pets', undefined],
    ['POST /v1/pets', 'POST', '/pets', '{"name":"Rex","categoryId":1}'],
    ['GET /v1/pets/{petId}', 'GET', '/pets/1', undefined],
  ] as const;
  const credentials = [
    ['no Authorization header', {}],
    ['an unknown key', { key: 'not-a-key' }],
    ['a key differing only in case', { key: KEY.toUpperCase() }],
    ['the Basic scheme', { authorization: `Basic ${Buffer.from(`${KEY}:`).toString('base64')}` }],
    ['the right key under the Basic scheme', { authorization: `Basic ${KEY}` }],
    ['the right key under a Token scheme', { authorization: `Token ${KEY}` }],
    ['the right key without a scheme', { authorization: KEY }],
    ['Bearer with no key', { authorization: 'Bearer' }],
    ['Bearer with two tokens', { authorization: `Bearer ${KEY} ${KEY}` }],
  ] as const;
  const cases = operations.flatMap(([operation, method, path, body]) =>
    credentials.map(([credential, auth]) => ({ operation, method, path, body, credential, auth })),
  );

  it.each(cases)(
    '$operation with $credential: 401 unauthorized with WWW-Authenticate and no X-RateLimit headers',
    async ({ method, path, body, auth }) => {
      const before = store.catalogue.size;
      const response = await callStore(store.url, path, { method, ...auth, ...(body ? { body } : {}) });
      expectError(response, 401, 'unauthorized');
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="petstore"');
      for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) {
        expect(response.headers.get(name), name).toBeNull();
      }
      expect(store.catalogue.size).toBe(before);
    },
  );

  it('accepts the bearer scheme in any case', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const response = await callStore(store.url, '/pets', { authorization: `${scheme} ${KEY}` });
      expect(response.status, scheme).toBe(200);
      expect(response.headers.get('www-authenticate')).toBeNull();
    }
  });
});

describe('onRequest', () => {
  let store: PetstoreHandle;
  const records: RequestRecord[] = [];

  beforeAll(async () => {
    store = await startPetstore({
      keys: { [KEY]: 'enterprise' },
      seed: seedPets(1),
      onRequest: (record) => records.push(record),
    });
  });
  afterAll(() => store.close());

  it('reports each request that reached an operation, with its key and final status', async () => {
    await callStore(store.url, '/pets', { key: KEY });
    await callStore(store.url, '/pets', { key: KEY, body: '{"name":"Rex","categoryId":1}' });
    await callStore(store.url, '/pets/99', { key: KEY });
    await callStore(store.url, '/pets/1', { key: 'unknown' });
    await callStore(store.url, '/pets');
    await callStore(store.url, '/pets', { method: 'DELETE', key: KEY });
    await callStore(originOf(store), '/nowhere', { key: KEY });
    expect(records.map(({ receivedAt, requestId, ...rest }) => rest)).toEqual([
      { operation: 'listPets', method: 'GET', key: KEY, status: 200, code: undefined },
      { operation: 'createPet', method: 'POST', key: KEY, status: 201, code: undefined },
      { operation: 'getPet', method: 'GET', key: KEY, status: 404, code: 'not_found' },
      { operation: 'getPet', method: 'GET', key: 'unknown', status: 401, code: 'unauthorized' },
      { operation: 'listPets', method: 'GET', key: undefined, status: 401, code: 'unauthorized' },
    ]);
    for (const record of records) expect(record.receivedAt).toBeGreaterThan(0);
  });
});

describe('unknown routes and methods', () => {
  let store: PetstoreHandle;

  beforeAll(async () => {
    store = await start(seedPets(2));
  });
  afterAll(() => store.close());

  it.each([
    '/',
    '/v1',
    '/v1/',
    '/v1/pets/',
    '/v1/pets/1/',
    '/v1/pets/1/photos',
    '/v1/store/orders',
    '/v1/categories',
    '/v2/pets',
    '/pets',
    '/V1/PETS',
  ])('answers 404 not_found for GET %s', async (path) => {
    const response = await callStore(originOf(store), path, { key: KEY });
    expectError(response, 404, 'not_found');
  });

  it.each([
    ['PUT', '/pets', 'GET, HEAD, POST'],
    ['PATCH', '/pets', 'GET, HEAD, POST'],
    ['DELETE', '/pets', 'GET, HEAD, POST'],
    ['POST', '/pets/1', 'GET, HEAD'],
    ['PUT', '/pets/1', 'GET, HEAD'],
    ['DELETE', '/pets/1', 'GET, HEAD'],
  ])('answers 405 method_not_allowed for %s %s with Allow: %s', async (method, path, allow) => {
    const response = await callStore(store.url, path, { method, key: KEY });
    expectError(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toBe(allow);
    expect(store.catalogue.size).toBe(2);
  });
});

/** Sends raw bytes and resolves with everything the server wrote before closing. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.write(request);
  });
}

function parseRawResponse(raw: string): StoreResponse {
  const split = raw.indexOf('\r\n\r\n');
  expect(split, raw).toBeGreaterThan(0);
  const [statusLine, ...headerLines] = raw.slice(0, split).split('\r\n');
  const headers = new Headers();
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers.append(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? '')?.[1]);
  return { status, headers, text: raw.slice(split + 4) };
}

describe('malformed HTTP', () => {
  let store: PetstoreHandle;

  beforeAll(async () => {
    store = await start(seedPets(2));
  });
  afterAll(() => store.close());

  it.each([
    ['garbage bytes', 'this is not HTTP at all\r\n\r\n'],
    ['an unknown HTTP version', 'GET /v1/pets HTTP/9.9\r\nHost: localhost\r\n\r\n'],
    ['spaces in the request target', 'GET /v1/pets with spaces HTTP/1.1\r\nHost: localhost\r\n\r\n'],
    [
      'two Content-Length headers',
      'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
    ],
    ['a header line without a colon', 'GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n'],
    ['a bad Content-Length', 'POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n'],
    ['binary noise', '\u0000\u0001\u0002\u00ff\r\n\r\n'],
  ])('answers %s with a 400 Error body and keeps serving', async (_case, request) => {
    const response = parseRawResponse(await rawExchange(store.port, request));
    expectError(response, 400, 'invalid_request');
    expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(response.text));

    const after = await callStore(store.url, '/pets', { key: KEY });
    expect(ids(expectPets(after))).toEqual([1n, 2n]);
  });

  it('answers oversized headers with a 431 Error body and keeps serving', async () => {
    const request = `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'p'.repeat(64 * 1024)}\r\n\r\n`;
    const response = parseRawResponse(await rawExchange(store.port, request));
    expectError(response, 431, 'invalid_request');
    expect((await callStore(store.url, '/pets', { key: KEY })).status).toBe(200);
  });

  it('serves a well-formed raw request on the same kind of connection', async () => {
    const raw = await rawExchange(
      store.port,
      `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`,
    );
    const response = parseRawResponse(raw);
    expect(response.status).toBe(200);
    expect(ids(expectPets(response))).toEqual([1n]);
  });
});

describe('int64 ids above 2^53', () => {
  const BIG = 9007199254740993n; // 2^53 + 1: the first integer a double cannot hold
  const MAX = 9223372036854775807n; // 2^63 - 1
  const bigPetJson = '{"id":9007199254740993,"name":"Big","categoryId":9007199254740995,"status":"available"}';
  const maxPetJson = '{"id":9223372036854775807,"name":"Max","categoryId":9223372036854775807,"status":"sold"}';
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeEach(async () => {
    store = await start([
      ...seedPets(3),
      { id: MAX, name: 'Max', categoryId: MAX, status: 'sold' },
      { id: BIG, name: 'Big', categoryId: 9007199254740995n, status: 'available' },
    ]);
    client = petstoreClient(store.url, KEY);
  });
  afterEach(() => store.close());

  it('lists huge ids digit for digit, in order', async () => {
    const response = await client.get('/pets');
    expect(response.text).toBe(
      `[${[1, 2, 3].map((i) => `{"id":${i},"name":"Pet ${i}","categoryId":${i},"status":"${STATUSES[i - 1]}"}`).join(',')},${bigPetJson},${maxPetJson}]`,
    );
    expect(ids(expectPets(response))).toEqual([1n, 2n, 3n, BIG, MAX]);
  });

  it('gets huge ids digit for digit, and does not confuse 2^53 + 1 with 2^53', async () => {
    const big = await client.get('/pets/9007199254740993');
    expect(big.status).toBe(200);
    expect(big.text).toBe(bigPetJson);
    const max = await client.get('/pets/9223372036854775807');
    expect(max.status).toBe(200);
    expect(max.text).toBe(maxPetJson);
    // Number('9007199254740993') is 9007199254740992: a rounding store would find the pet here.
    expectError(await client.get('/pets/9007199254740992'), 404, 'not_found');
    expectError(await client.get('/pets/9223372036854775806'), 404, 'not_found');
  });

  it('pages after a huge id', async () => {
    const first = await client.get('/pets?limit=1&after=3');
    expect(first.text).toBe(`[${bigPetJson}]`);
    expect(nextLink(first)).toBe(`${originOf(store)}/v1/pets?limit=1&after=9007199254740993`);

    const second = await client.get('/pets?limit=1&after=9007199254740993');
    expect(second.text).toBe(`[${maxPetJson}]`);
    expect(second.headers.get('link')).toBeNull();

    const between = await client.get('/pets?after=9007199254740992');
    expect(ids(expectPets(between))).toEqual([BIG, MAX]);

    const last = await client.get('/pets?after=9223372036854775807');
    expect(last.text).toBe('[]');
    expect(last.headers.get('link')).toBeNull();

    const sold = await walkPages(client, '/pets?status=sold&limit=1');
    expect(sold.pages.flat().map((pet) => pet.id)).toEqual([3n, MAX]);
    expect(sold.links).toEqual([`${originOf(store)}/v1/pets?limit=1&status=sold&after=3`]);
  });

  it.each([
    ['9223372036854775807', 9223372036854775807n],
    ['9007199254740993', 9007199254740993n],
  ])('round-trips a POSTed categoryId of %s exactly', async (digits, value) => {
    const response = await client.post('/pets', `{"name":"Exact","categoryId":${digits}}`);
    expect(response.status).toBe(201);
    // The largest id is taken, so the store assigns the smallest free one.
    expect(response.text).toBe(`{"id":4,"name":"Exact","categoryId":${digits},"status":"available"}`);
    expect(expectPet(response).categoryId).toBe(value);
    expect(response.headers.get('location')).toBe('/v1/pets/4');
    expect((await client.get('/pets/4')).text).toBe(response.text);
    expect(parseJson((await client.get('/pets?after=3&limit=1')).text)).toEqual([
      { id: 4n, name: 'Exact', categoryId: value, status: 'available' },
    ]);
  });
});
