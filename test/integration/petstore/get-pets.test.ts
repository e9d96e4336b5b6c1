/**
 * The reference Pet Store's reads over real HTTP (port 0): GET /v1/pets with its limits, status
 * filter and Link pages, the deprecated GET /v1/pets/{petId}, and int64 ids above 2^53 digit for
 * digit (the spec's endpoint table and the store's choices in docs/rest-interface.md).
 */

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PetstoreHandle } from '../../../src/petstore/start.js';
import {
  expectError,
  expectPet,
  expectPets,
  type PetstoreClient,
  parseJson,
  petstoreClient,
  type StoreResponse,
} from '../../helpers/petstore-client.js';
import {
  ids,
  KEY,
  nextLink,
  originOf,
  range,
  STATUSES,
  seedPets,
  startSeededStore,
  walkPages,
} from '../../helpers/seeded-store.js';

const DEPRECATION = '@1735689600';
const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';

describe('GET /v1/pets', () => {
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeAll(async () => {
    store = await startSeededStore(seedPets(45));
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

describe('GET /v1/pets/{petId}', () => {
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeAll(async () => {
    store = await startSeededStore(seedPets(5));
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

describe('int64 ids above 2^53', () => {
  const BIG = 9007199254740993n; // 2^53 + 1: the first integer a double cannot hold
  const MAX = 9223372036854775807n; // 2^63 - 1
  const bigPetJson = '{"id":9007199254740993,"name":"Big","categoryId":9007199254740995,"status":"available"}';
  const maxPetJson = '{"id":9223372036854775807,"name":"Max","categoryId":9223372036854775807,"status":"sold"}';
  let store: PetstoreHandle;
  let client: PetstoreClient;

  beforeEach(async () => {
    store = await startSeededStore([
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
