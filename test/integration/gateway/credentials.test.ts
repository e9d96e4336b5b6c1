/**
 * Which key the gateway sends upstream, end to end over real HTTP in front of the reference Pet Store
 * on port 0: a client's bearer key, PETSTORE_API_KEY when it sends none, and HTTP 401 (with no
 * upstream request) for any other Authorization or when there is no key at all.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CREATE, expectData, gqlPet, onlyError, PET, PETS, SEED, seedPet } from '../../helpers/seeded-pets.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';

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
