/**
 * Property tests over the schema: fast-check generates operations (fields of Query, Mutation, Pet and
 * PetConnection with random arguments, aliases and fragments), variables of right and wrong types,
 * hostile ids and strings (CRLF, '../', '%2e%2e', 2^64, emoji, 70,000 characters), forged cursors and
 * malformed request bodies. Whatever arrives, the gateway answers below 500 with errors that carry a
 * known code (never INTERNAL_SERVER_ERROR), never shows the API key, and /health keeps answering.
 */

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../../helpers/start-stack.js';

const SECRET_KEY = 'property-secret-5d1c0a9f';
const CLIENT_KEY = 'property-client-8e27b4c3';
const ROOMY = { perMinute: 1_000_000, perDay: 10_000_000 };

/** The README's "Errors" table, and Apollo Server's request-level codes. */
const KNOWN_CODES = new Set([
  'UNAUTHENTICATED',
  'BAD_USER_INPUT',
  'RATE_LIMITED',
  'UPSTREAM_UNAVAILABLE',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'OPERATION_RESOLUTION_FAILURE',
]);

const HOSTILE = [
  '\r\n',
  '1\r\nX-Injected: 1',
  '../',
  '../../admin',
  '%2e%2e',
  '%2e%2e%2fpets',
  '1/../../2',
  '18446744073709551616', // 2^64
  '9223372036854775808', // int64 max + 1
  '-9223372036854775809',
  '9223372036854775807',
  '9007199254740993',
  '-1',
  '0',
  '00000000000000000001',
  ' 1 ',
  '0x10',
  '1e3',
  '😀',
  '🐶'.repeat(201),
  '',
  ' ',
  '\u0000',
  'null',
  'x'.repeat(70_000),
];

const text = fc.oneof(
  fc.constantFrom(...HOSTILE),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
);
const anyValue = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(text, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), text, { maxKeys: 3 }),
  fc.constantFrom('AVAILABLE', 'SOLD', 'sold'),
);

/** Cursors: real ones (filled in before the runs), random strings, and forged base64url JSON. */
const realCursors: string[] = [];
const forgedPage = fc.oneof(
  fc.constantFrom(
    '/v1/pets?limit=500',
    '/v1/pets/1',
    '/v1/pets/1/x',
    '/v1/../admin',
    '/v1/%2e%2e/pets',
    'http://evil.example/v1/pets',
    '//evil.example/v1/pets',
    '/v1/pets?limit=2&status=sold',
  ),
  text.map((suffix) => `/v1/pets${suffix}`),
  text.map((path) => `/${path}`),
);
const cursor = fc.oneof(
  fc.nat({ max: 99 }).map((i) => realCursors[i % realCursors.length] ?? ''),
  text,
  fc
    .record({ p: fc.oneof(forgedPage, anyValue), o: fc.oneof(fc.integer({ min: -1, max: 20 }), anyValue), s: anyValue })
    .map((value) => Buffer.from(JSON.stringify(value)).toString('base64url')),
);

const STATUS = ['AVAILABLE', 'PENDING', 'SOLD'] as const;
const TYPES = ['ID!', 'ID', 'Int', 'Int!', 'String', 'PetStatus', 'CreatePetInput!', 'Boolean', '[ID!]'];
const json = (value: unknown) => JSON.stringify(value);

/** Mostly `right`, sometimes `wrong`: most operations pass validation, so resolvers meet the hostile values. */
function mostly<T>(right: fc.Arbitrary<T>, wrong: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ weight: 9, arbitrary: right }, { weight: 1, arbitrary: wrong });
}

/** An argument: a literal written into the operation, or a variable (its declared type, and its value if sent). */
type Arg = { literal: string } | { type: string; value: unknown };

function arg(type: string, right: fc.Arbitrary<unknown>, literal: fc.Arbitrary<string>, wrong: string[]) {
  return fc.oneof(
    mostly(literal, fc.constantFrom(...wrong)).map((value): Arg => ({ literal: value })),
    fc.record({
      type: mostly(fc.constant(type), fc.constantFrom(...TYPES)),
      value: fc.option(mostly(right, anyValue), { nil: undefined, freq: 10 }),
    }),
  );
}

const id = fc.oneof(fc.constantFrom('1', '2', '3', '5', '404', '9223372036854775807'), text);
const idArg = arg('ID!', id, id.map(json), ['1.5', 'null', 'true', 'SOLD', '[1]']);
const first = fc.integer({ min: -2, max: 120 });
const firstArg = arg('Int', first, first.map(String), ['2147483648', '1.5', '"3"', 'SOLD']);
const afterArg = arg('String', cursor, fc.oneof(cursor.map(json), fc.constant('null')), ['42', 'true']);
const statusArg = arg('PetStatus', fc.constantFrom(...STATUS), fc.constantFrom(...STATUS, 'null'), [
  'available',
  '"SOLD"',
  'LOST',
]);
const inputValue = fc.record(
  {
    name: mostly(fc.oneof(text, fc.constantFrom('Rex', 'a'.repeat(200), 'a'.repeat(201))), anyValue),
    categoryId: mostly(id, anyValue),
    status: fc.option(mostly(fc.constantFrom<unknown>(...STATUS), anyValue), { nil: undefined }),
    extra: mostly(fc.constant(undefined), anyValue),
  },
  { requiredKeys: ['name', 'categoryId'] },
);
const inputLiteral = inputValue.map(
  (input) =>
    `{ ${Object.entries(input)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => `${name}: ${name === 'status' && STATUS.includes(value as never) ? value : json(value)}`)
      .join(', ')} }`,
);
const inputArg = arg('CreatePetInput!', inputValue, inputLiteral, ['null', '"Rex"', '{}']);

const petSelection = fc.record({
  fields: fc.subarray(['id', 'name', 'status', 'category { id }', '__typename'], { minLength: 1 }),
  aliased: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
  wrap: fc.constantFrom('none', 'inline', 'spread'),
  unknownField: mostly(fc.constant(false), fc.constant(true)),
});
type PetSelection = typeof petSelection extends fc.Arbitrary<infer T> ? T : never;

const aliased = fc.boolean();
const petsField = fc.record({
  field: fc.constant('pets' as const),
  aliased,
  first: fc.option(firstArg, { nil: undefined }),
  after: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: afterArg }),
  status: fc.option(statusArg, { nil: undefined }),
  parts: fc.subarray(['edges', 'nodes', 'pageInfo'] as const, { minLength: 1 }),
  pet: petSelection,
});
const petField = fc.record({
  field: fc.constant('pet' as const),
  aliased,
  id: fc.option(idArg, { nil: undefined, freq: 20 }),
  pet: petSelection,
});
const createField = fc.record({
  field: fc.constant('createPet' as const),
  aliased,
  input: inputArg,
  pet: petSelection,
});
type RootField =
  typeof petsField extends fc.Arbitrary<infer A>
    ?
        | A
        | (typeof petField extends fc.Arbitrary<infer B> ? B : never)
        | (typeof createField extends fc.Arbitrary<infer C> ? C : never)
    : never;

/** Renders an operation: a mutation when any root field is createPet, with fragments as generated. */
function render(fields: RootField[]) {
  const declarations: string[] = [];
  const variables: Record<string, unknown> = {};
  let spread = false;
  const use = (value: Arg | undefined, name: string): string | undefined => {
    if (value === undefined) return undefined;
    if ('literal' in value) return `${name}: ${value.literal}`;
    const variable = `v${declarations.length}`;
    declarations.push(`$${variable}: ${value.type}`);
    variables[variable] = value.value;
    return `${name}: $${variable}`;
  };
  const pet = (selection: PetSelection): string => {
    // Distinct aliases, so fields never conflict; conflicts are validation's business, tested elsewhere.
    const fields = selection.unknownField ? [...selection.fields, 'nope'] : selection.fields;
    const body = fields.map((field, i) => (selection.aliased[i] ? `p${i}: ${field}` : field)).join(' ');
    if (selection.wrap === 'inline') return `{ ... on Pet { ${body} } }`;
    if (selection.wrap === 'spread') {
      spread = true;
      return `{ ...PetParts ${body} }`;
    }
    return `{ ${body} }`;
  };
  const mutation = fields.some((field) => field.field === 'createPet');
  const selections = fields.map((field, i) => {
    const repeated = fields.findIndex((other) => other.field === field.field) !== i;
    const name = field.aliased || repeated ? `f${i}: ${field.field}` : field.field;
    let args: (string | undefined)[];
    let selection: string;
    if (field.field === 'pets') {
      args = [use(field.first, 'first'), use(field.after, 'after'), use(field.status, 'status')];
      const parts = {
        edges: () => `edges { cursor node ${pet(field.pet)} }`,
        nodes: () => `nodes ${pet(field.pet)}`,
        pageInfo: () => 'pageInfo { hasNextPage endCursor }',
      };
      selection = `{ ${field.parts.map((part) => parts[part]()).join(' ')} }`;
    } else if (field.field === 'pet') {
      args = [use(field.id, 'id')];
      selection = pet(field.pet);
    } else {
      args = [use(field.input, 'input')];
      selection = `{ pet ${pet(field.pet)} }`;
    }
    const list = args.filter((value) => value !== undefined);
    return `${name}${list.length > 0 ? `(${list.join(', ')})` : ''} ${selection}`;
  });
  const head = `${mutation ? 'mutation' : 'query'} Op${declarations.length > 0 ? `(${declarations.join(', ')})` : ''}`;
  const fragment = spread ? ' fragment PetParts on Pet { id name }' : '';
  return { query: `${head} { ${selections.join(' ')} }${fragment}`, variables };
}

/** Queries, mutations, and now and then both in one operation (a validation error). */
const operation = fc
  .oneof(
    { weight: 6, arbitrary: fc.array(fc.oneof(petsField, petField), { minLength: 1, maxLength: 4 }) },
    { weight: 3, arbitrary: fc.array(createField, { minLength: 1, maxLength: 2 }) },
    { weight: 1, arbitrary: fc.array(fc.oneof(petsField, petField, createField), { minLength: 2, maxLength: 3 }) },
  )
  .map(render);

/** The request body: mostly a generated operation, sometimes a malformed GraphQL-over-HTTP request. */
const requestBody = fc.oneof(
  { weight: 8, arbitrary: operation.map((op) => json(op)) },
  {
    weight: 1,
    arbitrary: fc
      .record(
        {
          query: fc.oneof(
            operation.map((op) => op.query),
            anyValue,
          ),
          variables: anyValue,
          operationName: anyValue,
          extensions: fc.oneof(anyValue, fc.constant({ persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } })),
        },
        { requiredKeys: [] },
      )
      .map((body) => json(body)),
  },
  { weight: 1, arbitrary: fc.oneof(text, anyValue.map(json)) },
);

describe('generated operations against the gateway', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({
      store: { keys: { [SECRET_KEY]: ROOMY, [CLIENT_KEY]: ROOMY } },
      env: { PETSTORE_API_KEY: SECRET_KEY },
    });
    for (let i = 0; i < 5; i++) {
      await stack.query(`mutation { createPet(input: { name: "Seed ${i}", categoryId: "${i + 1}" }) { pet { id } } }`);
    }
    const page = await stack.query('{ pets(first: 2) { edges { cursor } } }');
    const edges: { cursor: string }[] = page.body.data?.pets.edges ?? [];
    realCursors.push(...edges.map((edge) => edge.cursor));
  });
  afterAll(() => stack.close());

  it('answers every generated request below 500, with known codes only, never showing a key', async () => {
    const health = stack.gateway.url.replace(/\/graphql$/, '/health');
    await fc.assert(
      fc.asyncProperty(requestBody, fc.constantFrom(undefined, CLIENT_KEY), async (body, key) => {
        const response = await fetch(stack.gateway.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
          body,
        });
        const answer = await response.text();
        expect(response.status).toBeLessThan(500);
        expect(answer).not.toContain(SECRET_KEY);
        expect(answer).not.toContain(CLIENT_KEY);
        const parsed = JSON.parse(answer) as { errors?: { extensions?: { code?: unknown } }[] };
        for (const error of parsed.errors ?? []) expect(KNOWN_CODES).toContain(error.extensions?.code);
        expect((await fetch(health)).status).toBe(200);
      }),
      { numRuns: 200 },
    );
  });
});

describe('gaps the generated operations found, now closed', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('answers a forged cursor whose page starts with /\\ with BAD_USER_INPUT', async () => {
    const forged = Buffer.from(JSON.stringify({ p: '/\\[', o: 0 })).toString('base64url');
    const response = await stack.query(`{ pets(after: "${forged}") { nodes { id } } }`);
    expect(response.body.errors?.map((error) => error.extensions?.code)).toEqual(['BAD_USER_INPUT']);
  });

  it('answers a persisted query whose hash does not match its query with BAD_REQUEST', async () => {
    const response = await fetch(stack.gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: '{ pets { nodes { id } } }',
        extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } },
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { errors: { extensions: { code: string } }[] };
    expect(body.errors.map((error) => error.extensions.code)).toEqual(['BAD_REQUEST']);
  });

  it('answers an _entities representation without a string id with BAD_USER_INPUT', async () => {
    for (const representation of ['{ __typename: "Pet" }', '{ __typename: "Pet", id: 5 }']) {
      const response = await stack.query(`{ _entities(representations: [${representation}]) { ... on Pet { id } } }`);
      expect(response.body.errors?.map((error) => error.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    }
  });
});
