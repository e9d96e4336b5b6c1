/**
 * schema/petstore.openapi.yaml against the reference Pet Store over real HTTP: every operation and
 * every documented status is driven, and each response's status, headers and body are validated
 * against the document (test/helpers/openapi-document.ts: ajv, JSON Schema 2020-12 as OpenAPI 3.1
 * uses it). Bodies are parsed with lossless-json, so ids above 2^53 are checked digit for digit and
 * as integers. The last test asserts that every operation/status pair the document lists was
 * exercised, so the document and the store cannot drift apart silently; that is why every operation
 * is driven from this one file.
 */

import { type LosslessNumber, parse } from 'lossless-json';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INT64_MAX } from '../../../src/int64.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import type { Pet } from '../../../src/petstore/store.js';
import {
  type Checked,
  createDocumentedCaller,
  DOC,
  decodePointer,
  documentedPairs,
  forSchema,
  OTHER_METHODS,
  parameterTokens,
  parameterValue,
  resolve,
  schemaErrors,
  validatorAt,
} from '../../helpers/openapi-document.js';

let store: PetstoreHandle;
const { call, exercised } = createDocumentedCaller({ baseUrl: () => store.url, key: 'k' });

/** The digits of each id in a parsed Pets body, exactly as sent. */
function ids(body: any[]): string[] {
  return body.map((pet) => (pet.id as LosslessNumber).value);
}

/** Above 2^53, and the largest int64 but one: createPet then hands out INT64_MAX itself. */
const BIG_ID = 9007199254740993n;
const NEAR_MAX_ID = INT64_MAX - 1n;
const SEED: Pet[] = [
  { id: 1n, name: 'Rex', categoryId: 1n, status: 'available' },
  { id: 2n, name: 'Luna', categoryId: 2n, status: 'pending' },
  { id: 3n, name: 'Milo', categoryId: 1n, status: 'sold' },
  { id: 4n, name: 'Bella', categoryId: 3n, status: 'available' },
  { id: BIG_ID, name: 'Big Id', categoryId: 9007199254740995n, status: 'available' },
  { id: NEAR_MAX_ID, name: 'Near Max', categoryId: INT64_MAX, status: 'sold' },
];
/** A frozen clock inside one minute window, so rate-limit windows never roll during the test. */
const NOW = Date.UTC(2030, 0, 1, 0, 0, 30);

const stores: PetstoreHandle[] = [];

beforeAll(async () => {
  store = await startPetstore({
    keys: {
      k: { perMinute: 1_000_000, perDay: 1_000_000_000 },
      tight: { perMinute: 1, perDay: 1_000 },
    },
    seed: SEED,
    now: () => NOW,
  });
  stores.push(store);
});

afterAll(async () => {
  await Promise.all(stores.map((each) => each.close()));
});

describe('schema/petstore.openapi.yaml', () => {
  it('is an OpenAPI 3.1 document of the spec: base addresses in /v1, bearer security, the three operations', () => {
    expect(DOC.openapi).toBe('3.1.0');
    expect(DOC.info.version).toBe('1.0.0');
    for (const server of DOC.servers) expect(server.url).toMatch(/\/v1$/);
    expect(DOC.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(DOC.security).toEqual([{ bearerAuth: [] }]);
    expect(DOC.paths['/pets'].get.operationId).toBe('listPets');
    expect(DOC.paths['/pets'].post.operationId).toBe('createPet');
    expect(DOC.paths['/pets/{petId}'].get.operationId).toBe('getPet');
    expect(DOC.paths['/pets/{petId}'].get.deprecated).toBe(true);
    expect(DOC.paths['/pets'].get.deprecated).toBeUndefined();
    const int64 = { type: 'integer', format: 'int64' };
    expect(DOC.components.schemas.Pet.properties.id).toMatchObject(int64);
    expect(DOC.components.schemas.Pet.properties.categoryId).toMatchObject(int64);
    expect(DOC.components.schemas.NewPet.properties.categoryId).toMatchObject(int64);
    expect(DOC.components.schemas.NewPet.required).toEqual(['name', 'categoryId']);
    expect(resolve(parameterTokens('/pets/{petId}', 'get', 'petId')).node).toMatchObject(int64);
    expect(resolve(parameterTokens('/pets', 'get', 'after')).node).toMatchObject(int64);
    expect(resolve(parameterTokens('/pets', 'get', 'limit')).node).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
    });
    expect(resolve(parameterTokens('/pets', 'get', 'status')).node.enum).toEqual(['available', 'pending', 'sold']);
    // Every error status of every operation answers with the Error schema.
    for (const pair of documentedPairs()) {
      const [method, template, status] = pair.split(' ') as [string, string, string];
      if (Number(status) < 400) continue;
      const base =
        method === '*'
          ? ['paths', template, OTHER_METHODS, 'responses', status]
          : ['paths', template, method.toLowerCase(), 'responses', status];
      const response = resolve(base);
      expect(resolve([...response.at, 'content', 'application/json', 'schema']).at.join('/'), pair).toBe(
        'components/schemas/Error',
      );
    }
  });

  it('has only $refs that resolve, and every schema compiles under strict JSON Schema 2020-12', () => {
    const refs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node !== null && typeof node === 'object') {
        for (const [name, value] of Object.entries(node)) {
          if (name === '$ref') refs.push(value as string);
          else walk(value);
        }
      }
    };
    walk(DOC);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(resolve(decodePointer(ref)).node, ref).toBeDefined();
    for (const name of Object.keys(DOC.components.schemas)) validatorAt(['components', 'schemas', name]);
    for (const name of Object.keys(DOC.components.headers)) validatorAt(['components', 'headers', name, 'schema']);
  });
});

describe('listPets: GET /pets', () => {
  it('200: a page of pets in id order, ids above 2^53 exact, with the rate-limit headers', async () => {
    const response = await call('GET', '/pets', '/pets');
    expect(response.status).toBe(200);
    expect(ids(response.body)).toEqual(SEED.map((pet) => String(pet.id)));
    expect(response.text).toContain(`"id":${BIG_ID},`);
    expect(response.text).toContain(`"categoryId":${INT64_MAX},`);
    expect(response.headers.get('link')).toBeNull();
  });

  it('200 with Link rel="next" while more remain; following it (the store`s `after` cursor) walks every page', async () => {
    const seen: string[] = [];
    let path: string | undefined = '/pets?limit=2';
    let pages = 0;
    while (path !== undefined) {
      const response = await call('GET', '/pets', path);
      expect(response.status).toBe(200);
      seen.push(...ids(response.body));
      pages++;
      const next = /^<([^>]+)>; *rel="next"$/.exec(response.headers.get('link') ?? '')?.[1];
      if (next !== undefined) {
        const url = new URL(next);
        expect(url.searchParams.get('after')).toMatch(/^[0-9]+$/);
        expect(
          schemaErrors(parameterTokens('/pets', 'get', 'after'), parameterValue(url.searchParams.get('after')!)),
        ).toEqual([]);
        path = `${url.pathname.replace(/^\/v1/, '')}${url.search}`;
      } else path = undefined;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(SEED.map((pet) => String(pet.id)));
  });

  it('200 filtered by every status value, and at both ends of the limit range', async () => {
    for (const status of ['available', 'pending', 'sold']) {
      const response = await call('GET', '/pets', `/pets?status=${status}`);
      expect(response.body.map((pet: any) => pet.status)).toEqual(
        SEED.filter((pet) => pet.status === status).map(() => status),
      );
    }
    expect((await call('GET', '/pets', '/pets?limit=1')).body).toHaveLength(1);
    expect((await call('GET', '/pets', '/pets?limit=100')).body).toHaveLength(SEED.length);
  });

  it('400 exactly for the query values the document rejects (limit outside 1..100 or not an integer, unknown status)', async () => {
    const cases: [name: string, raw: string, valid: boolean][] = [
      ['limit', '1', true],
      ['limit', '100', true],
      ['limit', '0', false],
      ['limit', '101', false],
      ['limit', '2.5', false],
      ['limit', 'ten', false],
      ['status', 'pending', true],
      ['status', 'lost', false],
      ['after', String(BIG_ID), true],
      ['after', 'x1', false],
      ['after', '9223372036854775808', false],
    ];
    for (const [name, raw, valid] of cases) {
      const errors = schemaErrors(parameterTokens('/pets', 'get', name), parameterValue(raw));
      expect(errors.length === 0, `${name}=${raw} per the document`).toBe(valid);
      const response = await call('GET', '/pets', `/pets?${name}=${encodeURIComponent(raw)}`);
      expect(response.status, `${name}=${raw} per the store`).toBe(valid ? 200 : 400);
      if (!valid) expect(response.body.code).toBe('invalid_request');
    }
  });

  it('401 without a key and with an unknown key', async () => {
    for (const key of [null, 'nope']) {
      const response = await call('GET', '/pets', '/pets', { key });
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthorized');
    }
  });
});

describe('createPet: POST /pets', () => {
  const newPetSchema = ['components', 'schemas', 'NewPet'];

  it('201 for bodies the NewPet schema accepts, with Location, the assigned int64 id and status defaulting to available', async () => {
    const bodies = [
      `{"name":"Ziggy","categoryId":3,"status":"pending"}`,
      `{"name":"Otis","categoryId":${INT64_MAX}}`,
      JSON.stringify({ name: 'n'.repeat(200), categoryId: 1, status: 'sold' }),
      JSON.stringify({ name: '🐈'.repeat(200), categoryId: 2 }),
      JSON.stringify({ name: ' Nala ', categoryId: 4, extra: true }),
    ];
    const created: string[] = [];
    for (const body of bodies) {
      expect(schemaErrors(newPetSchema, forSchema(parse(body))), body).toEqual([]);
      const response = await call('POST', '/pets', '/pets', { body });
      expect(response.status, body).toBe(201);
      const sent = parse(body) as any;
      expect(response.body.name).toBe(sent.name);
      expect(response.body.categoryId.value).toBe(sent.categoryId.value);
      expect(response.body.status).toBe(sent.status ?? 'available');
      expect(response.headers.get('location')).toBe(`/v1/pets/${response.body.id.value}`);
      created.push(response.body.id.value);
    }
    // After NEAR_MAX_ID the next id is INT64_MAX itself, written exactly; then the smallest free ids.
    expect(created).toEqual([String(INT64_MAX), '5', '6', '7', '8']);
  });

  it('400 exactly for bodies the NewPet schema rejects', async () => {
    const bodies = [
      `{"categoryId":1}`,
      `{"name":"Rex"}`,
      `{"name":"","categoryId":1}`,
      `{"name":"   ","categoryId":1}`,
      JSON.stringify({ name: 'n'.repeat(201), categoryId: 1 }),
      `{"name":7,"categoryId":1}`,
      `{"name":"Rex","categoryId":0}`,
      `{"name":"Rex","categoryId":-3}`,
      `{"name":"Rex","categoryId":1.5}`,
      `{"name":"Rex","categoryId":"1"}`,
      `{"name":"Rex","categoryId":9223372036854775808}`,
      `{"name":"Rex","categoryId":1,"status":"lost"}`,
      `["Rex"]`,
    ];
    for (const body of bodies) {
      expect(schemaErrors(newPetSchema, forSchema(parse(body))), body).not.toEqual([]);
      const response = await call('POST', '/pets', '/pets', { body });
      expect(response.status, body).toBe(400);
      expect(response.body.code).toBe('invalid_request');
    }
    const notJson = await call('POST', '/pets', '/pets', { body: '{"name":' });
    expect(notJson.status).toBe(400);
  });

  it('413 for a body over 16 KiB', async () => {
    const body = JSON.stringify({ name: 'Rex', categoryId: 1, padding: 'x'.repeat(17 * 1024) });
    const response = await call('POST', '/pets', '/pets', { body });
    expect(response.status).toBe(413);
    expect(response.body.code).toBe('payload_too_large');
  });

  it('401 without a key', async () => {
    const response = await call('POST', '/pets', '/pets', { key: null, body: '{"name":"Rex","categoryId":1}' });
    expect(response.status).toBe(401);
  });
});

describe('getPet: GET /pets/{petId} (deprecated)', () => {
  it('200 for a pet above 2^53, exact, with Deprecation and Sunset', async () => {
    const response = await call('GET', '/pets/{petId}', `/pets/${BIG_ID}`);
    expect(response.status).toBe(200);
    expect(response.body.id.value).toBe(String(BIG_ID));
    expect(response.text).toBe(`{"id":${BIG_ID},"name":"Big Id","categoryId":9007199254740995,"status":"available"}`);
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(response.headers.get('deprecation')).toBe('@1735689600');
  });

  it('400 exactly for petIds the document rejects; 404 for an int64 nobody has', async () => {
    const cases: [raw: string, status: number][] = [
      [String(NEAR_MAX_ID), 200],
      ['1', 200],
      ['999', 404],
      ['abc', 400],
      ['1.5', 400],
      ['9223372036854775808', 400],
    ];
    for (const [raw, status] of cases) {
      const errors = schemaErrors(parameterTokens('/pets/{petId}', 'get', 'petId'), parameterValue(raw));
      expect(errors.length === 0, `petId ${raw} per the document`).toBe(status !== 400);
      const response = await call('GET', '/pets/{petId}', `/pets/${raw}`);
      expect(response.status, `petId ${raw}`).toBe(status);
      if (status === 404) expect(response.body.code).toBe('not_found');
    }
  });

  it('401 without a key, still announcing the deprecation', async () => {
    const response = await call('GET', '/pets/{petId}', '/pets/1', { key: null });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });
});

describe('methods the document does not list', () => {
  it('405 with Allow on both paths', async () => {
    const onPets = await call('PUT', '/pets', '/pets', { body: '{}' });
    expect(onPets.status).toBe(405);
    expect(onPets.headers.get('allow')).toBe('GET, HEAD, POST');
    const onPet = await call('DELETE', '/pets/{petId}', '/pets/1');
    expect(onPet.status).toBe(405);
    expect(onPet.headers.get('allow')).toBe('GET, HEAD');
    expect(onPet.body.code).toBe('method_not_allowed');
  });
});

describe('429 on every operation', () => {
  it('rate_limited with Retry-After in seconds, then key_banned after ten requests in one 429 period', async () => {
    expect((await call('GET', '/pets', '/pets', { key: 'tight' })).status).toBe(200);
    const refused = [
      await call('GET', '/pets', '/pets', { key: 'tight' }),
      await call('POST', '/pets', '/pets', { key: 'tight', body: '{"name":"Rex","categoryId":1}' }),
      await call('GET', '/pets/{petId}', '/pets/1', { key: 'tight' }),
    ];
    for (const response of refused) {
      expect(response.status).toBe(429);
      expect(response.body.code).toBe('rate_limited');
      expect(response.headers.get('retry-after')).toBe('30');
      expect(response.headers.get('x-ratelimit-remaining')).toBe('0');
    }
    let last: Checked | undefined;
    for (let i = 0; i < 7; i++) last = await call('GET', '/pets/{petId}', '/pets/1', { key: 'tight' });
    expect(last?.status).toBe(429);
    expect(last?.body.code).toBe('key_banned');
    expect(last?.headers.get('retry-after')).toBe(String(15 * 60));
  });

  it('Retry-After as an HTTP-date also matches the document', async () => {
    const dated = await startPetstore({
      keys: { tight: { perMinute: 1, perDay: 10 } },
      now: () => NOW,
      retryAfter: 'http-date',
    });
    stores.push(dated);
    await call('GET', '/pets', '/pets', { key: 'tight' }, dated.url);
    const response = await call('GET', '/pets', '/pets', { key: 'tight' }, dated.url);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('Tue, 01 Jan 2030 00:01:00 GMT');
  });
});

describe('coverage of the document', () => {
  it('exercised every operation/status pair the document lists, and nothing it does not', () => {
    expect([...exercised].sort()).toEqual(documentedPairs());
    expect(documentedPairs()).toEqual([
      '* /pets 405',
      '* /pets/{petId} 405',
      'GET /pets 200',
      'GET /pets 400',
      'GET /pets 401',
      'GET /pets 429',
      'GET /pets/{petId} 200',
      'GET /pets/{petId} 400',
      'GET /pets/{petId} 401',
      'GET /pets/{petId} 404',
      'GET /pets/{petId} 429',
      'POST /pets 201',
      'POST /pets 400',
      'POST /pets 401',
      'POST /pets 413',
      'POST /pets 429',
    ]);
  });
});
