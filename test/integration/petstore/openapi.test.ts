/**
 * schema/petstore.openapi.yaml against the reference Pet Store over real HTTP: every operation and
 * every documented status is driven, and each response's status, headers and body are validated
 * against the document (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses it). Bodies are parsed with
 * lossless-json, so ids above 2^53 are checked digit for digit and as integers. The last test
 * asserts that every operation/status pair the document lists was exercised, so the document and
 * the store cannot drift apart silently.
 */

import { readFileSync } from 'node:fs';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { isInteger, isLosslessNumber, LosslessNumber, parse } from 'lossless-json';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { INT64_MAX, INT64_MIN } from '../../../src/int64.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import type { Pet } from '../../../src/petstore/store.js';

type Doc = Record<string, any>;

const DOC: Doc = parseYaml(readFileSync(new URL('../../../schema/petstore.openapi.yaml', import.meta.url), 'utf8'));
const DOC_ID = 'https://petstore.invalid/petstore.openapi.yaml';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Path-level extension listing the answer to any method the path does not document. */
const OTHER_METHODS = 'x-other-methods';

// ajv-formats is CommonJS whose module.exports is the plugin; under NodeNext its types put it on `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => Ajv2020;
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
// Integers only: values outside int64 never reach a schema as numbers (see forSchema).
ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isInteger(value) });
// The document's top level is OpenAPI, not JSON Schema: those keys are no-op keywords; schemas inside stay strict.
for (const keyword of ['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components'])
  ajv.addKeyword(keyword);
ajv.addSchema(DOC, DOC_ID);

/** A JSON pointer as URI fragment, for a $ref into the document. */
function fragment(tokens: readonly (string | number)[]): string {
  return `#/${tokens.map((token) => encodeURIComponent(String(token).replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
}

function decodePointer(ref: string): string[] {
  expect(ref.startsWith('#/'), `local $ref ${ref}`).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .map((token) => decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The node at `tokens`, following $refs; returns it with the pointer it really lives at. */
function resolve(tokens: readonly (string | number)[]): { node: any; at: (string | number)[] } {
  let node: any = DOC;
  for (const token of tokens) node = node?.[token];
  if (node !== null && typeof node === 'object' && typeof node.$ref === 'string')
    return resolve(decodePointer(node.$ref));
  return { node, at: [...tokens] };
}

const validators = new Map<string, ValidateFunction>();

function validatorAt(tokens: readonly (string | number)[]): ValidateFunction {
  const ref = `${DOC_ID}${fragment(tokens)}`;
  let validate = validators.get(ref);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  return validate;
}

/** ajv's errors for `value` against the schema at `tokens`; [] when valid. */
function schemaErrors(tokens: readonly (string | number)[], value: unknown): string[] {
  const validate = validatorAt(tokens);
  return validate(value) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message}`);
}

/**
 * A lossless-json value as JSON Schema should see it: an integer inside int64 becomes a number
 * (integral, so `type: integer` holds even where a double rounds it; exact digits are checked
 * separately), an integer outside int64 becomes a string so `type: integer` fails.
 */
function forSchema(value: unknown): unknown {
  if (isLosslessNumber(value)) {
    if (!isInteger(value.value)) return Number(value.value);
    const big = BigInt(value.value);
    return big >= INT64_MIN && big <= INT64_MAX ? Number(value.value) : `integer ${value.value} outside int64`;
  }
  if (Array.isArray(value)) return value.map(forSchema);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, forSchema(item)]));
  }
  return value;
}

/** A raw query or path parameter as its schema should see it (digits are numbers, anything else a string). */
function parameterValue(raw: string): unknown {
  return isInteger(raw) ? forSchema(new LosslessNumber(raw)) : raw;
}

function parameterTokens(template: string, method: string, name: string): (string | number)[] {
  for (const base of [
    ['paths', template, method, 'parameters'],
    ['paths', template, 'parameters'],
  ]) {
    const count = (resolve(base).node as unknown[] | undefined)?.length ?? 0;
    for (let index = 0; index < count; index++) {
      const parameter = resolve([...base, index]);
      if (parameter.node.name === name) return [...parameter.at, 'schema'];
    }
  }
  throw new Error(`${method.toUpperCase()} ${template} documents no parameter ${name}`);
}

/** Every operation/status pair the document lists: `GET /pets 200`; `* /pets 405` for other methods. */
function documentedPairs(): string[] {
  const pairs: string[] = [];
  for (const [template, item] of Object.entries<Doc>(DOC.paths)) {
    for (const method of HTTP_METHODS) {
      for (const status of Object.keys(item[method]?.responses ?? {}))
        pairs.push(`${method.toUpperCase()} ${template} ${status}`);
    }
    for (const status of Object.keys(item[OTHER_METHODS]?.responses ?? {})) pairs.push(`* ${template} ${status}`);
  }
  return pairs.sort();
}

const exercised = new Set<string>();

interface Checked {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed by lossless-json: every number is a LosslessNumber. */
  readonly body: any;
}

interface CallOptions {
  readonly key?: string | null;
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

let store: PetstoreHandle;

/**
 * Sends `method path` (path relative to the base URL, matching the document's `template`) and
 * validates the answer against the document: the status is documented for the operation, the
 * content type and body match its schema, and each documented header is present when required
 * and matches its schema. Records the operation/status pair as exercised.
 */
async function call(
  method: string,
  template: string,
  path: string,
  { key = 'k', body, headers = {} }: CallOptions = {},
  baseUrl = store.url,
): Promise<Checked> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  const status = String(response.status);
  const item = DOC.paths[template];
  expect(item, `path ${template} is documented`).toBeDefined();
  const lower = method.toLowerCase();
  const [pair, base] =
    item[lower] === undefined
      ? [`* ${template} ${status}`, ['paths', template, OTHER_METHODS, 'responses', status]]
      : [`${method} ${template} ${status}`, ['paths', template, lower, 'responses', status]];
  const { node: documented, at } = resolve(base);
  expect(documented, `${pair} is documented (body: ${text})`).toBeDefined();
  exercised.add(pair);

  const media = Object.keys(documented.content ?? {});
  let parsed: any;
  if (media.length === 0) {
    expect(text, `${pair} has no body`).toBe('');
  } else {
    expect(media).toContain(response.headers.get('content-type'));
    parsed = parse(text);
    const schemaAt = [...at, 'content', response.headers.get('content-type') as string, 'schema'];
    expect(schemaErrors(schemaAt, forSchema(parsed)), `${pair} body ${text}`).toEqual([]);
    if (resolve(schemaAt).at.join('/') === 'components/schemas/Error') {
      expect(String(parsed.status), `${pair}: Error.status is the HTTP status`).toBe(status);
    }
  }

  for (const name of Object.keys(documented.headers ?? {})) {
    const header = resolve([...at, 'headers', name]);
    const value = response.headers.get(name);
    if (value === null) {
      expect(header.node.required ?? false, `${pair}: required header ${name}`).toBe(false);
      continue;
    }
    const schema = resolve([...header.at, 'schema']).node;
    const typed = schema.type === 'integer' && isInteger(value) ? Number(value) : value;
    expect(schemaErrors([...header.at, 'schema'], typed), `${pair}: header ${name}: ${value}`).toEqual([]);
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

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
