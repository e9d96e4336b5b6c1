/**
 * The gateway as an Apollo Federation v2 subgraph: its schema composes with a second subgraph that
 * extends Pet and owns Category, and a router (@apollo/gateway, the one examples/federation runs)
 * serves queries that cross both, with the pet lookups behind `_entities` costing list requests only.
 */

import { composeServices } from '@apollo/composition';
import { buildSchema, type GraphQLObjectType, Kind } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import {
  adoptionsTypeDefs,
  type SubgraphHandle,
  startAdoptionsSubgraph,
} from '../../../examples/federation/adoptions.js';
import { startRouter } from '../../../examples/federation/router.js';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { typeDefs } from '../../../src/gateway/server.js';
import type { Pet } from '../../../src/petstore/store.js';
import { gql } from '../../helpers/gql.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';

const TWO_53_PLUS_1 = '9007199254740993';
const CATALOGUE: Pet[] = [
  ...Array.from({ length: 150 }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: BigInt((i % 4) + 1),
    status: 'available' as const,
  })),
  { id: BigInt(TWO_53_PLUS_1), name: 'Big Id', categoryId: 9007199254740995n, status: 'sold' },
];
const FEATURED = ['3', '42', TWO_53_PLUS_1, '150'];
const OTHER_KEY = 'other-key-9876543210';

describe('composition', () => {
  const services = [
    { name: 'petstore', typeDefs, url: 'http://petstore.test/graphql' },
    { name: 'adoptions', typeDefs: adoptionsTypeDefs, url: 'http://adoptions.test/graphql' },
  ];
  const ourTypes = new Set(
    typeDefs.definitions.flatMap((definition) =>
      definition.kind === Kind.OBJECT_TYPE_DEFINITION ||
      definition.kind === Kind.ENUM_TYPE_DEFINITION ||
      definition.kind === Kind.INPUT_OBJECT_TYPE_DEFINITION
        ? [definition.name.value]
        : [],
    ),
  );

  it('composes schema/petstore.graphql with a subgraph that extends Pet and owns Category, with no errors and no hints about our types', () => {
    const result = composeServices(services);
    expect(result.errors).toBeUndefined();
    const ourHints = (result.hints ?? []).filter((hint) => {
      const typeName = (hint.coordinate ?? hint.element?.coordinate ?? '').split('.')[0] ?? '';
      return ourTypes.has(typeName) || [...ourTypes].some((name) => new RegExp(`"${name}[".]`).test(hint.message));
    });
    expect(ourHints.map((hint) => hint.message)).toEqual([]);
    expect(ourTypes).toEqual(
      new Set([
        'PetStatus',
        'Pet',
        'Category',
        'PetConnection',
        'PetEdge',
        'PageInfo',
        'Query',
        'RateLimit',
        'CreatePetInput',
        'CreatePetPayload',
        'Mutation',
      ]),
    );
  });

  it('gives the supergraph one Pet with the fields of both subgraphs, and Category with the name adoptions owns', () => {
    const { supergraphSdl } = composeServices(services);
    const supergraph = buildSchema(supergraphSdl ?? '');
    const fields = (name: string) => Object.keys((supergraph.getType(name) as GraphQLObjectType).getFields()).sort();
    expect(fields('Pet')).toEqual(['adoptionFee', 'category', 'id', 'name', 'status']);
    expect(fields('Category')).toEqual(['id', 'name']);
    expect(fields('Query')).toEqual(['featuredPets', 'pet', 'pets', 'rateLimit']);
    expect(fields('RateLimit')).toEqual(['cost', 'limit', 'remaining', 'resetAt', 'used']);
  });
});

describe('a federated query through @apollo/gateway', () => {
  let stack: Stack | undefined;
  let adoptions: SubgraphHandle | undefined;
  let router: SubgraphHandle | undefined;

  afterEach(async () => {
    await router?.close();
    await adoptions?.close();
    await stack?.close();
    router = adoptions = stack = undefined;
  });

  async function start(strategy: string): Promise<{ stack: Stack; url: string }> {
    stack = await startStack({
      store: {
        seed: CATALOGUE,
        keys: {
          [TEST_KEY]: { perMinute: 100_000, perDay: 1_000_000 },
          [OTHER_KEY]: { perMinute: 100_000, perDay: 1_000_000 },
        },
      },
      env: { PET_LOOKUP: strategy },
    });
    adoptions = await startAdoptionsSubgraph({ port: 0, host: '127.0.0.1', featured: FEATURED });
    router = await startRouter({
      port: 0,
      host: '127.0.0.1',
      logger: createLogger('silent'),
      subgraphs: [
        { name: 'petstore', url: stack.gateway.url },
        { name: 'adoptions', url: adoptions.url },
      ],
    });
    return { stack, url: router.url };
  }

  it.each(['list', 'auto'])(
    'PET_LOOKUP=%s: featuredPets (adoptions) → name, status (petstore) → category name (adoptions), with list requests only',
    async (strategy) => {
      const { stack, url } = await start(strategy);
      expect(stack.requests).toEqual([]);
      const response = await gql(url, '{ featuredPets { id name status adoptionFee category { id name } } }');
      expect(response.body).toEqual({
        data: {
          featuredPets: [
            { id: '3', name: 'Pet 3', status: 'AVAILABLE', adoptionFee: 80, category: { id: '3', name: 'Birds' } },
            { id: '42', name: 'Pet 42', status: 'AVAILABLE', adoptionFee: 70, category: { id: '2', name: 'Cats' } },
            {
              id: TWO_53_PLUS_1,
              name: 'Big Id',
              status: 'SOLD',
              adoptionFee: 80,
              category: { id: '9007199254740995', name: 'Category 9007199254740995' },
            },
            { id: '150', name: 'Pet 150', status: 'AVAILABLE', adoptionFee: 50, category: { id: '2', name: 'Cats' } },
          ],
        },
      });
      // One _entities call for the four pets: one scan of the two pages, and never the deprecated getPet.
      expect(stack.requests.map((record) => record.operation)).toEqual(['listPets', 'listPets']);
      expect(stack.requests.every((record) => record.key === TEST_KEY)).toBe(true);
    },
  );

  it('serves pets (petstore) with adoptionFee and category name (adoptions) in one list request', async () => {
    const { stack, url } = await start('list');
    const response = await gql(url, '{ pets(first: 2) { nodes { id name adoptionFee category { name } } } }');
    expect(response.body).toEqual({
      data: {
        pets: {
          nodes: [
            { id: '1', name: 'Pet 1', adoptionFee: 60, category: { name: 'Dogs' } },
            { id: '2', name: 'Pet 2', adoptionFee: 70, category: { name: 'Cats' } },
          ],
        },
      },
    });
    expect(stack.requests.map((record) => record.operation)).toEqual(['listPets']);
  });

  it("passes a client's bearer key through the router, so the pet store is called with that key", async () => {
    const { stack, url } = await start('list');
    const response = await gql(url, '{ featuredPets { name } }', { key: OTHER_KEY });
    expect(response.body.errors).toBeUndefined();
    expect(stack.requests.map((record) => [record.operation, record.key])).toEqual([
      ['listPets', OTHER_KEY],
      ['listPets', OTHER_KEY],
    ]);
  });
});
