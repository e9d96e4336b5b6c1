/**
 * Which requests the reference Pet Store serves, over real HTTP (port 0): every row of the spec's
 * authentication table, the onRequest report, unknown routes and methods, and malformed HTTP sent
 * as raw bytes over a TCP socket.
 */

import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import { callStore, expectError, expectPets, type StoreResponse } from '../../helpers/petstore-client.js';
import { ids, KEY, originOf, seedPets, startSeededStore } from '../../helpers/seeded-store.js';

describe('authentication', () => {
  let store: PetstoreHandle;

  beforeAll(async () => {
    store = await startSeededStore(seedPets(2));
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
    store = await startSeededStore(seedPets(2));
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
    store = await startSeededStore(seedPets(2));
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
