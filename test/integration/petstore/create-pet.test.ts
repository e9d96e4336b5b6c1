/**
 * The reference Pet Store's POST /v1/pets over real HTTP (port 0): what it creates, every body it
 * rejects with 400, and the 413 for a body over the limit, declared or chunked.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PetstoreHandle } from '../../../src/petstore/start.js';
import {
  callStore,
  expectError,
  expectPet,
  expectPets,
  type PetstoreClient,
  petstoreClient,
} from '../../helpers/petstore-client.js';
import { KEY, STATUSES, seedPets, startSeededStore } from '../../helpers/seeded-store.js';

describe('POST /v1/pets', () => {
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeAll(async () => {
    store = await startSeededStore(seedPets(3));
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
    store = await startSeededStore(seedPets(1), { maxBodyBytes: 100 });
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
