/**
 * The gateway end to end over real HTTP, in front of the reference Pet Store on port 0: every field
 * and argument of the schema, pagination by cursors, int64 ids above 2^53 in both directions, each
 * error code with the upstream answer that causes it, credentials, argument validation (with no
 * upstream request), pet lookups by id, and the HTTP edge (health, landing pages, CSRF).
 */

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../../src/gateway/graphql/ids.js';
import { keyIdOf } from '../../../src/gateway/shared/key-id.js';
import type { Pet, PetStatus } from '../../../src/petstore/store.js';
import { errorCodes, type GqlResponse } from '../../helpers/gql.js';
import { callStore } from '../../helpers/petstore-client.js';
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
import { walkPets } from '../../helpers/walk-pets.js';

const REST_STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold'];
const ENUM = { available: 'AVAILABLE', pending: 'PENDING', sold: 'SOLD' } as const;
type EnumStatus = (typeof ENUM)[PetStatus];

/** 2^53 and 2^53 + 1: one double, two pets. */
const TWO_53 = 9007199254740992n;
const TWO_53_PLUS_1 = 9007199254740993n;
const INT64_MAX = 9223372036854775807n;

/** 22 small ids with cycling statuses, then three ids above 2^53: 25 pets, a count few page sizes divide. */
const SEED: readonly Pet[] = [
  ...Array.from({ length: 22 }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: BigInt((i % 4) + 1),
    status: REST_STATUSES[i % 3] as PetStatus,
  })),
  { id: TWO_53, name: 'Twin A', categoryId: 9007199254740995n, status: 'pending' },
  { id: TWO_53_PLUS_1, name: 'Twin B', categoryId: INT64_MAX, status: 'sold' },
  { id: INT64_MAX, name: 'Max', categoryId: 1n, status: 'available' },
];

interface GqlPet {
  id: string;
  name: string;
  status: EnumStatus | null;
  category: { id: string };
}

interface Connection {
  edges: { cursor: string; node: GqlPet }[];
  nodes: GqlPet[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

const PET_FIELDS = 'id name status category { id }';

const PETS = `query Pets($first: Int, $after: String, $status: PetStatus) {
  pets(first: $first, after: $after, status: $status) {
    edges { cursor node { ${PET_FIELDS} } }
    nodes { ${PET_FIELDS} }
    pageInfo { hasNextPage endCursor }
  }
}`;

const PET = `query Pet($id: ID!) { pet(id: $id) { ${PET_FIELDS} } }`;

const CREATE = `mutation Create($input: CreatePetInput!) { createPet(input: $input) { pet { ${PET_FIELDS} } } }`;

/** A seeded pet as the gateway shows it. */
function gqlPet(pet: Pet): GqlPet {
  return { id: String(pet.id), name: pet.name, status: ENUM[pet.status], category: { id: String(pet.categoryId) } };
}

function seeded(status?: PetStatus): GqlPet[] {
  return SEED.filter((pet) => status === undefined || pet.status === status).map(gqlPet);
}

function seedPet(id: bigint): Pet {
  const pet = SEED.find((candidate) => candidate.id === id);
  if (pet === undefined) throw new Error(`no seeded pet ${id}`);
  return pet;
}

/** The one error of a response, asserted to carry `code`. */
function onlyError(response: GqlResponse<unknown>, code: string): NonNullable<GqlResponse['body']['errors']>[number] {
  expect(errorCodes(response)).toEqual([code]);
  return response.body.errors?.[0] as NonNullable<GqlResponse['body']['errors']>[number];
}

/** Asserts a response without errors whose data is `data` (extensions such as rateLimit may come along). */
function expectData(response: GqlResponse<unknown>, data: unknown): void {
  expect(response.body.errors).toBeUndefined();
  expect(response.body.data).toEqual(data);
}

/** A cursor as a client could forge it: base64url JSON (the gateway's are sealed, so these never pass). */
function forgeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The stack's cursor secret, so a test can seal a cursor as the gateway would (as if the secret leaked). */
const CURSOR_SECRET = 'gateway-pets test cursor secret';

interface Walk {
  ids: string[];
  pages: number;
  pets: GqlPet[];
}

/** Follows endCursor from the first page to the last, checking each page's shape on the way. */
async function walk(
  query: Stack['query'],
  first: number,
  status?: EnumStatus,
  options: { key?: string } = {},
): Promise<Walk> {
  const { pets, pages } = await walkPets(query, first, status, options);
  return { ids: pets.map((pet) => pet.id), pages, pets: pets as GqlPet[] };
}

describe('the pets connection and pet lookups against the reference store', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ store: { seed: SEED }, env: { CURSOR_SECRET } });
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.requests.length = 0;
  });

  describe('pets', () => {
    it('serves edges with cursors, nodes and pageInfo for a first page, in one upstream request', async () => {
      const response = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 3 } });
      expect(response.status).toBe(200);
      expect(response.body.errors).toBeUndefined();
      const connection = response.body.data?.pets as Connection;
      expect(connection.nodes).toEqual(seeded().slice(0, 3));
      expect(connection.edges.map((edge) => edge.node)).toEqual(connection.nodes);
      const cursors = connection.edges.map((edge) => edge.cursor);
      expect(new Set(cursors).size).toBe(3);
      for (const cursor of cursors) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(connection.pageInfo).toEqual({ hasNextPage: true, endCursor: cursors[2] });
      expect(stack.requests).toEqual([
        expect.objectContaining({ operation: 'listPets', method: 'GET', key: TEST_KEY, status: 200 }),
      ]);
    });

    it('gives 20 pets when first is not given', async () => {
      const response = await stack.query<{ pets: Connection }>('{ pets { nodes { id } pageInfo { hasNextPage } } }');
      expect(response.body.data?.pets.nodes.map((pet) => pet.id)).toEqual(
        seeded()
          .slice(0, 20)
          .map((pet) => pet.id),
      );
      expect(response.body.data?.pets.pageInfo.hasNextPage).toBe(true);
    });

    it('maps every REST status to its enum value, and ids above 2^53 come back as exact strings', async () => {
      const response = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 100 } });
      const connection = response.body.data?.pets as Connection;
      expect(connection.nodes).toEqual(seeded());
      expect(connection.nodes.slice(-3)).toEqual([
        { id: '9007199254740992', name: 'Twin A', status: 'PENDING', category: { id: '9007199254740995' } },
        { id: '9007199254740993', name: 'Twin B', status: 'SOLD', category: { id: '9223372036854775807' } },
        { id: '9223372036854775807', name: 'Max', status: 'AVAILABLE', category: { id: '1' } },
      ]);
      expect(connection.pageInfo.hasNextPage).toBe(false);
      expect(new Set(connection.nodes.map((pet) => pet.status))).toEqual(new Set(['AVAILABLE', 'PENDING', 'SOLD']));
    });

    it.each(REST_STATUSES)('filters by status %s, sending the REST value upstream', async (status) => {
      const response = await stack.query<{ pets: Connection }>(PETS, {
        variables: { first: 100, status: ENUM[status] },
      });
      expect(response.body.data?.pets.nodes).toEqual(seeded(status));
      expect(response.body.data?.pets.nodes.length).toBeGreaterThan(5);
      expect(stack.count('listPets')).toBe(1);
    });

    it.each([1, 4, 5, 7, 10, 24, 25, 26, 100])(
      'pages through the whole catalogue with first %i following endCursor, one upstream request a page',
      async (first) => {
        const result = await walk(stack.query, first);
        expect(result.pets).toEqual(seeded());
        expect(new Set(result.ids).size).toBe(SEED.length);
        expect(result.pages).toBe(Math.ceil(SEED.length / first));
        expect(stack.count('listPets')).toBe(result.pages);
        expect(stack.count()).toBe(result.pages);
      },
    );

    it.each(REST_STATUSES.flatMap((status) => [2, 3, 4].map((first) => [status, first] as const)))(
      'pages through the %s pets with first %i, hasNextPage false only at the end',
      async (status, first) => {
        const result = await walk(stack.query, first, ENUM[status]);
        expect(result.pets).toEqual(seeded(status));
        expect(result.pages).toBe(Math.ceil(seeded(status).length / first));
        expect(stack.count('listPets')).toBe(result.pages);
      },
    );

    it('continues right after an edge in the middle of a page, whatever first the next call asks', async () => {
      const page = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 5 } });
      const middle = page.body.data?.pets.edges[1]?.cursor as string;
      const ids = seeded().map((pet) => pet.id);

      const same = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 5, after: middle } });
      expect(same.body.data?.pets.nodes.map((pet) => pet.id)).toEqual(ids.slice(2, 7));
      expect(same.body.data?.pets.pageInfo.hasNextPage).toBe(true);

      const fewer = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 2, after: middle } });
      expect(fewer.body.data?.pets.nodes.map((pet) => pet.id)).toEqual(ids.slice(2, 4));

      const more = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 12, after: middle } });
      expect(more.body.data?.pets.nodes.map((pet) => pet.id)).toEqual(ids.slice(2, 14));

      // Every edge's cursor continues right after that edge.
      for (const [index, edge] of (same.body.data?.pets.edges ?? []).entries()) {
        const next = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 1, after: edge.cursor } });
        expect(next.body.data?.pets.nodes.map((pet) => pet.id)).toEqual([ids[index + 3]]);
      }
    });

    it('continues a status-filtered connection from a mid-page edge within that status', async () => {
      const sold = seeded('sold').map((pet) => pet.id);
      const page = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 3, status: 'SOLD' } });
      const cursor = page.body.data?.pets.edges[0]?.cursor as string;
      const next = await stack.query<{ pets: Connection }>(PETS, {
        variables: { first: 4, after: cursor, status: 'SOLD' },
      });
      expect(next.body.data?.pets.nodes.map((pet) => pet.id)).toEqual(sold.slice(1, 5));
    });

    it('gives an empty page with a null endCursor after the last pet', async () => {
      const last = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 100 } });
      const cursor = last.body.data?.pets.pageInfo.endCursor as string;
      const after = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 10, after: cursor } });
      expect(after.body.errors).toBeUndefined();
      expect(after.body.data?.pets).toEqual({
        edges: [],
        nodes: [],
        pageInfo: { hasNextPage: false, endCursor: null },
      });
    });

    it('refuses a cursor of a status-filtered query with another filter as BAD_USER_INPUT, with no upstream request', async () => {
      const sold = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 2, status: 'SOLD' } });
      const unfiltered = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 2 } });
      const soldCursor = sold.body.data?.pets.pageInfo.endCursor as string;
      const plainCursor = unfiltered.body.data?.pets.pageInfo.endCursor as string;
      stack.requests.length = 0;

      for (const [after, status] of [
        [soldCursor, 'PENDING'],
        [soldCursor, 'AVAILABLE'],
        [soldCursor, undefined],
        [plainCursor, 'SOLD'],
      ] as const) {
        const response = await stack.query(PETS, { variables: { first: 2, after, status } });
        expect(response.status).toBe(200);
        expect(response.body.data).toBeNull();
        expect(onlyError(response, 'BAD_USER_INPUT').path).toEqual(['pets']);
      }
      expect(stack.count()).toBe(0);
    });
  });

  describe('pet', () => {
    it('finds a pet by id with every field', async () => {
      const response = await stack.query<{ pet: GqlPet }>(PET, { variables: { id: '7' } });
      expectData(response, { pet: gqlPet(seedPet(7n)) });
    });

    it('tells 2^53 and 2^53 + 1 apart and finds int64 max, ids exact both ways', async () => {
      const response = await stack.query(
        `{ a: pet(id: "9007199254740993") { ${PET_FIELDS} } b: pet(id: "9007199254740992") { ${PET_FIELDS} } c: pet(id: "9223372036854775807") { ${PET_FIELDS} } }`,
      );
      expectData(response, {
        a: { id: '9007199254740993', name: 'Twin B', status: 'SOLD', category: { id: '9223372036854775807' } },
        b: { id: '9007199254740992', name: 'Twin A', status: 'PENDING', category: { id: '9007199254740995' } },
        c: { id: '9223372036854775807', name: 'Max', status: 'AVAILABLE', category: { id: '1' } },
      });
      expect(stack.count('getPet')).toBe(0);
    });

    it.each(['9007199254740994', '23', '0', '-5', '-9223372036854775808'])(
      'answers null without an error for the absent id %s',
      async (id) => {
        const response = await stack.query(PET, { variables: { id } });
        expectData(response, { pet: null });
      },
    );

    it('reads an id given as an Int literal', async () => {
      const response = await stack.query('{ pet(id: 12) { id name } }');
      expectData(response, { pet: { id: '12', name: 'Pet 12' } });
    });

    it('trims white space around an id and reads leading zeros as the same id', async () => {
      const response = await stack.query('{ a: pet(id: " 12 ") { id name } b: pet(id: "007") { id name } }');
      expectData(response, { a: { id: '12', name: 'Pet 12' }, b: { id: '7', name: 'Pet 7' } });
    });
  });

  describe('arguments the gateway refuses before any upstream request', () => {
    it.each([0, 101, -1, 1000])('refuses pets(first: %i) with BAD_USER_INPUT', async (first) => {
      const response = await stack.query(PETS, { variables: { first } });
      expect(response.status).toBe(200);
      expect(response.body.data).toBeNull();
      const error = onlyError(response, 'BAD_USER_INPUT');
      expect(error.path).toEqual(['pets']);
      expect(error.message).toContain('first');
      expect(stack.count()).toBe(0);
    });

    it('refuses an explicit first: null with BAD_USER_INPUT', async () => {
      const response = await stack.query('{ pets(first: null) { nodes { id } } }');
      onlyError(response, 'BAD_USER_INPUT');
      expect(stack.count()).toBe(0);
    });

    it.each([
      ['garbage', '!!not-a-cursor!!'],
      ['an empty string', ''],
      ['base64url of text', Buffer.from('hello').toString('base64url')],
      ['a cursor for another path', forgeCursor({ p: '/v1/orders?limit=2', o: 0 })],
      ['a cursor for another origin', forgeCursor({ p: 'http://evil.test/v1/pets', o: 0 })],
      ['a cursor with a negative offset', forgeCursor({ p: '/v1/pets?limit=2', o: -1 })],
    ])('refuses %s as after with BAD_USER_INPUT', async (_label, after) => {
      const response = await stack.query(PETS, { variables: { first: 2, after } });
      expect(response.body.data).toBeNull();
      onlyError(response, 'BAD_USER_INPUT');
      expect(stack.count()).toBe(0);
    });

    it.each(['abc', '1.5', '9223372036854775808', '-9223372036854775809', '', ' ', '1e3', '+1', '0x10'])(
      'refuses pet(id: %j) with BAD_USER_INPUT',
      async (id) => {
        const response = await stack.query(PET, { variables: { id } });
        expect(response.status).toBe(200);
        expect(response.body.data).toEqual({ pet: null });
        expect(onlyError(response, 'BAD_USER_INPUT').path).toEqual(['pet']);
        expect(stack.count()).toBe(0);
      },
    );

    it.each([
      ['an empty name', { name: '', categoryId: '1' }],
      ['a name of white space only', { name: ' \t\n ', categoryId: '1' }],
      ['a 201-character name', { name: 'x'.repeat(201), categoryId: '1' }],
      ['a name of 201 characters outside the BMP', { name: '🐶'.repeat(201), categoryId: '1' }],
      ['categoryId 0', { name: 'Rex', categoryId: '0' }],
      ['categoryId -1', { name: 'Rex', categoryId: '-1' }],
      ['categoryId abc', { name: 'Rex', categoryId: 'abc' }],
      ['categoryId 1.5', { name: 'Rex', categoryId: '1.5' }],
      ['categoryId 2^63', { name: 'Rex', categoryId: '9223372036854775808' }],
    ])('refuses createPet with %s as BAD_USER_INPUT', async (_label, input) => {
      const response = await stack.query(CREATE, { variables: { input } });
      expect(response.status).toBe(200);
      expect(response.body.data).toBeNull();
      expect(onlyError(response, 'BAD_USER_INPUT').path).toEqual(['createPet']);
      expect(stack.count()).toBe(0);
    });

    it.each([
      ['a string for Int', 'query($f: Int) { pets(first: $f) { nodes { id } } }', { f: 'ten' }],
      ['a float for Int', 'query($f: Int) { pets(first: $f) { nodes { id } } }', { f: 2.5 }],
      ['a float for ID', 'query($id: ID!) { pet(id: $id) { id } }', { id: 1.5 }],
      ['a boolean for ID', 'query($id: ID!) { pet(id: $id) { id } }', { id: true }],
      ['no value for ID!', 'query($id: ID!) { pet(id: $id) { id } }', {}],
      ['a REST status for the enum', 'query($s: PetStatus) { pets(status: $s) { nodes { id } } }', { s: 'sold' }],
      ['an input without name', CREATE, { input: { categoryId: '1' } }],
      ['an input with an unknown field', CREATE, { input: { name: 'Rex', categoryId: '1', tags: [] } }],
    ])('refuses %s in variables with HTTP 400 and BAD_USER_INPUT', async (_label, query, variables) => {
      const response = await stack.query(query, { variables });
      expect(response.status).toBe(400);
      expect(response.body.data).toBeUndefined();
      onlyError(response, 'BAD_USER_INPUT');
      expect(stack.count()).toBe(0);
    });

    it('refuses a REST status written as an enum literal as a validation error', async () => {
      const response = await stack.query('{ pets(status: sold) { nodes { id } } }');
      expect(response.status).toBe(400);
      onlyError(response, 'GRAPHQL_VALIDATION_FAILED');
      expect(stack.count()).toBe(0);
    });
  });

  describe('upstream answers that become errors', () => {
    it('answers an upstream 401 (a bearer key the store does not know, forwarded) with UNAUTHENTICATED', async () => {
      const response = await stack.query(PETS, { variables: { first: 2 }, key: 'unknown-key' });
      expect(response.status).toBe(200);
      expect(response.body.data).toBeNull();
      const error = onlyError(response, 'UNAUTHENTICATED');
      expect(error.extensions?.upstream).toEqual({ code: 'unauthorized', message: 'invalid API key', status: 401 });
      expect(JSON.stringify(response.body)).not.toContain('unknown-key');
      expect(stack.requests).toEqual([
        expect.objectContaining({ operation: 'listPets', key: 'unknown-key', status: 401 }),
      ]);
    });

    it('answers an upstream 401 on a lookup and on createPet with UNAUTHENTICATED', async () => {
      // Keys of their own: a key the upstream refused moments ago is refused again without asking it.
      const lookup = await stack.query(PET, { variables: { id: '1' }, key: 'unknown-key-2' });
      expect(lookup.body.data).toEqual({ pet: null });
      onlyError(lookup, 'UNAUTHENTICATED');
      const create = await stack.query(CREATE, { variables: { input: { name: 'Rex', categoryId: '1' } }, key: 'nope' });
      expect(create.body.data).toBeNull();
      onlyError(create, 'UNAUTHENTICATED');
      expect(stack.requests.map((record) => [record.key, record.status])).toEqual([
        ['unknown-key-2', 401],
        ['nope', 401],
      ]);
    });

    // The resolvers hand these over located themselves (resolvers/locating.ts).
    it.each([
      [
        'a refused key (a rejection, from the upstream)',
        'query Listing {\n  first: pets(first: 2) { nodes { id } }\n}',
        'unknown-key-3',
        {
          message: 'the Pet Store did not accept the API key',
          locations: [{ line: 2, column: 3 }],
          path: ['first'],
          extensions: {
            code: 'UNAUTHENTICATED',
            upstream: { code: 'unauthorized', message: 'invalid API key', status: 401 },
          },
        },
      ],
      [
        'a refused argument (thrown), beside a field that succeeds',
        '{ a: pet(id: "1") { id }\n    b: pets(first: 0) { nodes { id } } }',
        undefined,
        {
          message: 'first must be an integer from 1 to 100',
          locations: [{ line: 2, column: 5 }],
          path: ['b'],
          extensions: { code: 'BAD_USER_INPUT' },
        },
      ],
      [
        'a refused lookup',
        '{\n pet(id: "x") { id } }',
        undefined,
        {
          message: 'id must be an int64 integer written in decimal',
          locations: [{ line: 2, column: 2 }],
          path: ['pet'],
          extensions: { code: 'BAD_USER_INPUT' },
        },
      ],
      [
        'a refused create',
        'mutation { createPet(input: { name: " ", categoryId: "1" }) { pet { id } } }',
        undefined,
        {
          message: 'name must be 1 to 200 characters and not only white space',
          locations: [{ line: 1, column: 12 }],
          path: ['createPet'],
          extensions: { code: 'BAD_USER_INPUT' },
        },
      ],
    ])(
      'reports %s at its field, with its locations and path, as graphql-js does',
      async (_label, query, key, error) => {
        const response = await stack.query(query, key === undefined ? {} : { key });
        expect(response.body.errors).toEqual([error]);
      },
    );

    // No client input that the gateway lets through is refused by the reference store: the gateway checks
    // first (1..100), status (an enum), ids (int64), names (1..200 characters) and categoryId (positive int64)
    // exactly as the store does, and seals its cursors. Only a cursor sealed with the secret reaches an upstream 400.
    it('answers an upstream 400 with BAD_USER_INPUT carrying the REST Error body (a cursor sealed with the secret)', async () => {
      const after = createCursorCodec(CURSOR_SECRET)
        .forKey(keyIdOf(TEST_KEY))
        .encode({ page: '/v1/pets?limit=2&status=lost', offset: 0, status: undefined });
      const response = await stack.query(PETS, { variables: { first: 2, after } });
      expect(response.status).toBe(200);
      expect(response.body.data).toBeNull();
      const error = onlyError(response, 'BAD_USER_INPUT');
      expect(error.extensions?.upstream).toEqual({
        code: 'invalid_request',
        message: 'status must be one of available, pending, sold',
        status: 400,
      });
      expect(stack.requests).toEqual([expect.objectContaining({ operation: 'listPets', status: 400 })]);
    });
  });

  describe('pet lookups and the list in one operation', () => {
    it('serves the same id asked twice in one operation with one upstream request', async () => {
      const response = await stack.query('{ a: pet(id: "3") { id } b: pet(id: "3") { name } }');
      expectData(response, { a: { id: '3' }, b: { name: 'Pet 3' } });
      expect(stack.count()).toBe(1);
    });

    it('answers a lookup in the same operation as a list correctly', async () => {
      const response = await stack.query(`{ pets(first: 10) { nodes { id } } pet(id: "3") { ${PET_FIELDS} } }`);
      expect(response.body.data?.pet).toEqual(gqlPet(seedPet(3n)));
      expect(stack.count('getPet')).toBe(0);
    });

    // Sibling root fields run concurrently: the lookup's batch waits for the list page in flight.
    it('costs no extra upstream request for a lookup of a pet the same operation lists', async () => {
      const response = await stack.query(`{ pets(first: 10) { nodes { id } } pet(id: "3") { ${PET_FIELDS} } }`);
      expect(response.body.data?.pet).toEqual(gqlPet(seedPet(3n)));
      expect(stack.count()).toBe(1);
    });
  });
});

describe('pet lookup batches', () => {
  const CATALOGUE: Pet[] = [
    ...Array.from({ length: 250 }, (_, i) => ({
      id: BigInt(i + 1),
      name: `Pet ${i + 1}`,
      categoryId: 1n,
      status: 'available' as const,
    })),
    { id: TWO_53_PLUS_1, name: 'Twin B', categoryId: 2n, status: 'sold' },
  ];
  const FULL_SCAN = Math.ceil(CATALOGUE.length / 100);
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ store: { seed: CATALOGUE } });
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.requests.length = 0;
  });

  function aliased(ids: readonly string[]): string {
    return `{ ${ids.map((id, i) => `p${i}: pet(id: "${id}") { id name }`).join(' ')} }`;
  }

  it('serves 50 aliased pet(id:) fields with no deprecated getPet call and at most one scan of the catalogue', async () => {
    const present = Array.from({ length: 48 }, (_, i) => String((i + 1) * 5));
    const ids = [...present, String(TWO_53_PLUS_1), '999999'];
    expect(ids).toHaveLength(50);
    const response = await stack.query(aliased(ids));
    expect(response.body.errors).toBeUndefined();
    const data = response.body.data as Record<string, { id: string; name: string } | null>;
    for (const [i, id] of present.entries()) expect(data[`p${i}`]).toEqual({ id, name: `Pet ${id}` });
    expect(data.p48).toEqual({ id: '9007199254740993', name: 'Twin B' });
    expect(data.p49).toBeNull();
    expect(stack.count('getPet')).toBe(0);
    // The absent id makes the scan read to the last page: exactly one pass over the catalogue.
    expect(stack.count('listPets')).toBe(FULL_SCAN);
  });

  it('stops scanning as soon as every id of the batch is found', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => String(i + 1));
    const response = await stack.query(aliased(ids));
    expect(Object.values(response.body.data ?? {}).map((pet: any) => pet.id)).toEqual(ids);
    expect(stack.count('getPet')).toBe(0);
    expect(stack.count('listPets')).toBe(1);
  });

  it('answers null for an absent id', async () => {
    const response = await stack.query(PET, { variables: { id: '251' } });
    expectData(response, { pet: null });
    expect(stack.count()).toBeLessThanOrEqual(FULL_SCAN);
  });

  it('uses a new loader for each request: the same lookup twice asks the upstream twice', async () => {
    await stack.query(PET, { variables: { id: '1' } });
    const first = stack.count();
    await stack.query(PET, { variables: { id: '1' } });
    expect(first).toBeGreaterThan(0);
    expect(stack.count()).toBe(2 * first);
  });
});

describe('PET_LOOKUP strategies and the sunset date', () => {
  const CATALOGUE: Pet[] = Array.from({ length: 150 }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: 1n,
    status: 'available' as const,
  }));
  let stack: Stack | undefined;

  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('list: an absent id is answered null after a scan of every page, never by getPet', async () => {
    stack = await startStack({ store: { seed: CATALOGUE }, env: { PET_LOOKUP: 'list' } });
    const response = await stack.query(PET, { variables: { id: '151' } });
    expectData(response, { pet: null });
    expect(stack.count('listPets')).toBe(2);
    expect(stack.count('getPet')).toBe(0);
  });

  it('legacy: one deprecated getPet per id, and a 404 is null', async () => {
    stack = await startStack({ store: { seed: CATALOGUE }, env: { PET_LOOKUP: 'legacy' } });
    const response = await stack.query('{ a: pet(id: "5") { name } b: pet(id: "151") { name } }');
    expectData(response, { a: { name: 'Pet 5' }, b: null });
    expect(stack.count('getPet')).toBe(2);
    expect(stack.count('listPets')).toBe(0);
  });

  it('auto: once a full scan took more pages than a batch has ids, the batch uses getPet', async () => {
    stack = await startStack({ store: { seed: CATALOGUE } });
    // A batch of two scans (one id would use getPet while the scan length is unknown: its cost is sure).
    await stack.query('{ a: pet(id: "151") { id } b: pet(id: "152") { id } }');
    expect(stack.count('listPets')).toBe(2);
    stack.requests.length = 0;
    const response = await stack.query(PET, { variables: { id: '140' } });
    expectData(response, { pet: { id: '140', name: 'Pet 140', status: 'AVAILABLE', category: { id: '1' } } });
    expect(stack.requests.map((record) => record.operation)).toEqual(['getPet']);
  });

  it.each(['legacy', 'auto'])('%s: never calls getPet on or after 5 December 2030', async (strategy) => {
    stack = await startStack({
      store: { seed: CATALOGUE },
      env: { PET_LOOKUP: strategy },
      gateway: { now: () => Date.UTC(2030, 11, 5) },
    });
    await stack.query(PET, { variables: { id: '151' } });
    const response = await stack.query(PET, { variables: { id: '140' } });
    expect(response.body.data?.pet?.name).toBe('Pet 140');
    expect(stack.count('getPet')).toBe(0);
  });
});

describe('createPet', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ store: { seed: SEED.slice(0, 3) } });
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.requests.length = 0;
  });

  async function create(input: Record<string, unknown>): Promise<GqlPet> {
    const response = await stack.query<{ createPet: { pet: GqlPet } }>(CREATE, { variables: { input } });
    expect(response.body.errors).toBeUndefined();
    return response.body.data?.createPet.pet as GqlPet;
  }

  it('creates a pet with status AVAILABLE when none is given, in one upstream request', async () => {
    const pet = await create({ name: 'Rex', categoryId: '4' });
    expect(pet).toEqual({ id: '4', name: 'Rex', status: 'AVAILABLE', category: { id: '4' } });
    expect(stack.store.catalogue.get(4n)).toEqual({ id: 4n, name: 'Rex', categoryId: 4n, status: 'available' });
    expect(stack.requests).toEqual([
      expect.objectContaining({ operation: 'createPet', method: 'POST', key: TEST_KEY, status: 201 }),
    ]);
  });

  it.each(REST_STATUSES)('maps status %s to the REST value and back', async (status) => {
    const pet = await create({ name: `A ${status} pet`, categoryId: '1', status: ENUM[status] });
    expect(pet.status).toBe(ENUM[status]);
    expect(stack.store.catalogue.get(BigInt(pet.id))?.status).toBe(status);
  });

  it('stores categoryId 9223372036854775807 exactly and answers it exactly', async () => {
    const pet = await create({ name: 'Max category', categoryId: '9223372036854775807' });
    expect(pet.category).toEqual({ id: '9223372036854775807' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.categoryId).toBe(9223372036854775807n);
  });

  it('stores categoryId 2^53 + 1 exactly, not rounded to 2^53', async () => {
    const pet = await create({ name: 'Twin category', categoryId: '9007199254740993' });
    expect(pet.category).toEqual({ id: '9007199254740993' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.categoryId).toBe(9007199254740993n);
  });

  it('takes a categoryId with white space around it, trimmed', async () => {
    const pet = await create({ name: 'Spaced', categoryId: ' 12 ' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.categoryId).toBe(12n);
  });

  it('takes a name of 200 characters outside the BMP (counted as characters, not UTF-16 units)', async () => {
    const name = '🐶'.repeat(200);
    const pet = await create({ name, categoryId: '1' });
    expect(pet.name).toBe(name);
    expect(stack.store.catalogue.get(BigInt(pet.id))?.name).toBe(name);
  });

  it('keeps a name with quotes, backslashes and control characters exact', async () => {
    const name = 'Rex "the \\ dog"\n\t</script>';
    const pet = await create({ name, categoryId: '1' });
    expect(stack.store.catalogue.get(BigInt(pet.id))?.name).toBe(name);
  });

  it('lists a created pet afterwards', async () => {
    const pet = await create({ name: 'Listed', categoryId: '2', status: 'SOLD' });
    const response = await stack.query<{ pets: Connection }>(PETS, { variables: { first: 100, status: 'SOLD' } });
    expect(response.body.data?.pets.nodes).toContainEqual(pet);
  });

  it('creates a pet under an id above 2^53 when the store hands one out', async () => {
    const big = await startStack({
      store: { seed: [{ id: TWO_53, name: 'Twin A', categoryId: 1n, status: 'available' }] },
    });
    try {
      const response = await big.query<{ createPet: { pet: GqlPet } }>(CREATE, {
        variables: { input: { name: 'Next', categoryId: '1' } },
      });
      expect(response.body.data?.createPet.pet.id).toBe('9007199254740993');
      const lookup = await big.query(PET, { variables: { id: '9007199254740993' } });
      expect(lookup.body.data?.pet?.name).toBe('Next');
    } finally {
      await big.close();
    }
  });
});

describe('credentials', () => {
  const OTHER_KEY = 'other-key-abcdef';
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({
      store: {
        seed: SEED,
        keys: {
          [TEST_KEY]: { perMinute: 100_000, perDay: 1_000_000 },
          [OTHER_KEY]: { perMinute: 100_000, perDay: 1_000_000 },
        },
      },
    });
  });
  afterAll(() => stack.close());
  beforeEach(() => {
    stack.requests.length = 0;
  });

  it("forwards a client's bearer key upstream instead of the configured one", async () => {
    const response = await stack.query(PETS, { variables: { first: 2 }, key: OTHER_KEY });
    expect(response.body.errors).toBeUndefined();
    const create = await stack.query(CREATE, {
      variables: { input: { name: 'Mine', categoryId: '1' } },
      key: OTHER_KEY,
    });
    expect(create.body.errors).toBeUndefined();
    expect(stack.requests.map((record) => [record.operation, record.key])).toEqual([
      ['listPets', OTHER_KEY],
      ['createPet', OTHER_KEY],
    ]);
  });

  it('reads the Bearer scheme in any letter case', async () => {
    const response = await stack.query(PET, {
      variables: { id: '1' },
      headers: { authorization: `bearer ${OTHER_KEY}` },
    });
    expect(response.body.errors).toBeUndefined();
    expect(stack.requests.map((record) => record.key)).toEqual([OTHER_KEY]);
  });

  it('uses PETSTORE_API_KEY when the client sends no Authorization header', async () => {
    const response = await stack.query(PET, { variables: { id: '1' } });
    expect(response.body.errors).toBeUndefined();
    expect(stack.requests.map((record) => record.key)).toEqual([TEST_KEY]);
  });

  it.each(['Basic xyz', 'Bearer', 'Bearer ', 'Bearer two words', 'Token abc', `${OTHER_KEY}`])(
    'answers Authorization %j with HTTP 401 UNAUTHENTICATED and no upstream request, even with a configured key',
    async (authorization) => {
      const response = await stack.query(PET, { variables: { id: '1' }, headers: { authorization } });
      expect(response.status).toBe(401);
      onlyError(response, 'UNAUTHENTICATED');
      expect(stack.count()).toBe(0);
    },
  );
});

describe('no credential at all', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ store: { seed: SEED }, env: { PETSTORE_API_KEY: '' } });
  });
  afterAll(() => stack.close());

  it('answers HTTP 401 UNAUTHENTICATED to a query and a mutation, with no upstream request', async () => {
    expect(stack.config.apiKey).toBeUndefined();
    for (const [query, variables] of [
      [PETS, { first: 2 }],
      [PET, { id: '1' }],
      [CREATE, { input: { name: 'Rex', categoryId: '1' } }],
    ] as const) {
      const response = await stack.query(query, { variables });
      expect(response.status).toBe(401);
      expect(response.body.data).toBeUndefined();
      onlyError(response, 'UNAUTHENTICATED');
    }
    expect(stack.count()).toBe(0);
  });

  it('answers Authorization: Basic with HTTP 401 too', async () => {
    const response = await stack.query(PET, { variables: { id: '1' }, headers: { authorization: 'Basic xyz' } });
    expect(response.status).toBe(401);
    onlyError(response, 'UNAUTHENTICATED');
    expect(stack.count()).toBe(0);
  });

  it('serves schema metadata (_service for routers and Rover, introspection) without a key', async () => {
    const service = await stack.query('{ _service { sdl } }');
    expect(service.status).toBe(200);
    expect(service.body.data?._service.sdl).toMatch(/type Pet\s+@key\(fields: "id"\)/);
    const introspection = await stack.query('query Q { __schema { queryType { name } } __typename }');
    expect(introspection.body.data).toEqual({ __schema: { queryType: { name: 'Query' } }, __typename: 'Query' });
    // Metadata beside a field that needs the upstream is no longer metadata only.
    const mixed = await stack.query('{ _service { sdl } pets { nodes { id } } }');
    expect(mixed.status).toBe(401);
    expect(stack.count()).toBe(0);
  });

  it('still serves a client that sends its own bearer key', async () => {
    const response = await stack.query(PET, { variables: { id: '1' }, key: TEST_KEY });
    expectData(response, { pet: gqlPet(seedPet(1n)) });
  });
});

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

describe('the HTTP edge', () => {
  let dev: Stack;
  let production: Stack;
  let productionIntrospection: Stack;

  beforeAll(async () => {
    [dev, production, productionIntrospection] = await Promise.all([
      startStack({ store: { seed: SEED } }),
      startStack({ store: { seed: SEED }, env: { NODE_ENV: 'production' } }),
      startStack({ store: { seed: SEED }, env: { NODE_ENV: 'production', INTROSPECTION: 'true' } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([dev.close(), production.close(), productionIntrospection.close()]);
  });

  const INTROSPECT = '{ __schema { queryType { name } mutationType { name } } }';

  it('answers /health with 200', async () => {
    const response = await fetch(dev.gateway.url.replace(/\/graphql$/, '/health'));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers another path with 404', async () => {
    const response = await fetch(dev.gateway.url.replace(/\/graphql$/, '/nothing'));
    expect(response.status).toBe(404);
  });

  it('serves the embedded Apollo Sandbox to a browser outside production', async () => {
    const response = await fetch(dev.gateway.url, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain('id="embeddableSandbox"');
    expect(html).toContain('new window.EmbeddedSandbox');
    expect(dev.count()).toBe(0);
  });

  it('serves the production landing page, not Sandbox, in production', async () => {
    const response = await fetch(production.gateway.url, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('apollo-server-landing-page.cdn.apollographql.com');
    expect(html).toContain('Welcome to Apollo Server');
    expect(html).not.toContain('embeddableSandbox');
  });

  it('allows introspection outside production', async () => {
    const response = await dev.query(INTROSPECT);
    expectData(response, { __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } } });
  });

  it('refuses introspection in production', async () => {
    const response = await production.query(INTROSPECT);
    expect(response.status).toBe(400);
    const error = onlyError(response, 'GRAPHQL_VALIDATION_FAILED');
    expect(error.extensions?.validationErrorCode).toBe('INTROSPECTION_DISABLED');
    expect(production.count()).toBe(0);
  });

  it('allows introspection in production with INTROSPECTION=true', async () => {
    const response = await productionIntrospection.query(INTROSPECT);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({
      __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } },
    });
  });

  it('gives no field suggestions in production', async () => {
    const response = await production.query('{ pets { nodez { id } } }');
    expect(response.status).toBe(400);
    expect(response.body.errors?.[0]?.message).not.toContain('Did you mean');
    const devResponse = await dev.query('{ pets { nodez { id } } }');
    expect(devResponse.body.errors?.[0]?.message).toContain('Did you mean');
  });

  it('serves a GET query that carries a preflight header', async () => {
    const url = `${dev.gateway.url}?query=${encodeURIComponent('{ pet(id: "1") { id } }')}`;
    const response = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as GqlResponse['body']).data).toEqual({ pet: { id: '1' } });
  });

  it('refuses a GET query without a preflight header as possible CSRF, with no upstream request', async () => {
    dev.requests.length = 0;
    const url = `${dev.gateway.url}?query=${encodeURIComponent('{ pet(id: "1") { id } }')}`;
    const response = await fetch(url);
    expect(response.status).toBe(400);
    const body = (await response.json()) as GqlResponse['body'];
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(body.errors?.[0]?.message).toContain('CSRF');
    expect(dev.count()).toBe(0);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'refuses a POST with Content-Type %s as possible CSRF',
    async (type) => {
      dev.requests.length = 0;
      const response = await fetch(dev.gateway.url, {
        method: 'POST',
        headers: { 'content-type': type },
        body: JSON.stringify({ query: '{ pet(id: "1") { id } }' }),
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as GqlResponse['body'];
      expect(body.errors?.[0]?.message).toContain('CSRF');
      expect(dev.count()).toBe(0);
    },
  );

  it('refuses a mutation sent with GET', async () => {
    const url = `${dev.gateway.url}?query=${encodeURIComponent('mutation { createPet(input: { name: "G", categoryId: "1" }) { pet { id } } }')}`;
    const response = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
    expect(response.status).toBe(405);
    expect(dev.store.catalogue.size).toBe(SEED.length);
  });

  it('answers a CORS preflight from an allowed origin (Sandbox by default), allowing only the headers it reads', async () => {
    const response = await fetch(dev.gateway.url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://studio.apollographql.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization, x-evil',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://studio.apollographql.com');
    const allowed = response.headers.get('access-control-allow-headers')?.split(', ') ?? [];
    expect(allowed).toEqual(expect.arrayContaining(['content-type', 'authorization']));
    expect(allowed).not.toContain('x-evil');
  });
});
