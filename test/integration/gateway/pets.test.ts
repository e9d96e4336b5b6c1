/**
 * The pets connection and pet lookups end to end over real HTTP, in front of the reference Pet Store
 * on port 0: every field and argument of the schema, pagination by cursors, int64 ids above 2^53 in
 * both directions, argument validation (with no upstream request), the upstream's 401 and 400 as
 * error codes located at their field, and lookups beside the list.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../../src/gateway/graphql/ids.js';
import { keyIdOf } from '../../../src/gateway/shared/key-id.js';
import {
  type Connection,
  CREATE,
  CURSOR_SECRET,
  ENUM,
  expectData,
  forgeCursor,
  type GqlPet,
  gqlPet,
  onlyError,
  PET,
  PET_FIELDS,
  PETS,
  REST_STATUSES,
  SEED,
  seeded,
  seedPet,
  walk,
} from '../../helpers/seeded-pets.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';

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
