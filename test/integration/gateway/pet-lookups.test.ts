/**
 * What pet lookups by id cost at the reference store (docs/architecture.md, "Pet lookups"), counted request by
 * request: federation `_entities` and aliased `pet(id:)` batches under each PET_LOOKUP strategy, the
 * sunset date, lookups of pets the same operation lists, loaders never shared between API keys, and
 * the deprecated endpoint logged once and counted but never shown to GraphQL clients.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { GET_PET_SUNSET } from '../../../src/petstore/app.js';
import type { Pet } from '../../../src/petstore/store.js';
import type { GqlResponse } from '../../helpers/gql.js';
import { availablePets } from '../../helpers/seeded-pets.js';
import { type Stack, type StackOptions, startStack, TEST_KEY } from '../../helpers/start-stack.js';

const TWO_53_PLUS_1 = '9007199254740993';
/** Pets 1..250 and one id above 2^53, in three pages of 100. */
const CATALOGUE: Pet[] = [
  ...availablePets(250),
  { id: BigInt(TWO_53_PLUS_1), name: 'Big Id', categoryId: 2n, status: 'sold' },
];
const FULL_SCAN = Math.ceil(CATALOGUE.length / 100);
const ABSENT = '999999';
const OTHER_KEY = 'other-key-9876543210';

const ENTITIES = `query ($representations: [_Any!]!) {
  _entities(representations: $representations) { ... on Pet { id name } }
}`;

let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(strategy: string, options: StackOptions = {}): Promise<Stack> {
  stack = await startStack({ ...options, store: { seed: CATALOGUE, ...options.store }, env: { PET_LOOKUP: strategy } });
  return stack;
}

function entities(target: Stack, ids: readonly string[], key?: string) {
  const representations = ids.map((id) => ({ __typename: 'Pet', id }));
  return target.query(ENTITIES, { variables: { representations }, ...(key ? { key } : {}) });
}

function aliased(target: Stack, ids: readonly string[]) {
  return target.query(`{ ${ids.map((id, i) => `p${i}: pet(id: "${id}") { id name }`).join(' ')} }`);
}

/** What the store holds for an id, as the query asks it, or null. */
function expected(id: string): { id: string; name: string } | null {
  const pet = CATALOGUE.find((p) => String(p.id) === id);
  return pet ? { id, name: pet.name } : null;
}

function results(response: GqlResponse): unknown[] {
  expect(response.body.errors).toBeUndefined();
  const data = response.body.data ?? {};
  return Array.isArray(data._entities) ? data._entities : Object.values(data);
}

function operations(target: Stack): string[] {
  return target.requests.map((record) => record.operation);
}

/** 100 ids spread over every page: 98 present, the id above 2^53 (last page), and one absent. */
const HUNDRED = [...Array.from({ length: 98 }, (_, i) => String((i + 1) * 2)), TWO_53_PLUS_1, ABSENT];

describe('PET_LOOKUP=list', () => {
  it(`serves 100 _entities representations with one scan: ${FULL_SCAN} list requests, no getPet`, async () => {
    const target = await start('list');
    const response = await entities(target, HUNDRED);
    expect(results(response)).toEqual(HUNDRED.map(expected));
    expect(operations(target)).toEqual(Array(FULL_SCAN).fill('listPets'));
  });

  it(`serves 100 aliased pet(id:) fields with one scan: ${FULL_SCAN} list requests, no getPet`, async () => {
    const target = await start('list');
    const response = await aliased(target, HUNDRED);
    expect(results(response)).toEqual(HUNDRED.map(expected));
    expect(operations(target)).toEqual(Array(FULL_SCAN).fill('listPets'));
  });

  it('answers absent pets with null, one result per representation in their order, duplicates included', async () => {
    const target = await start('list');
    const ids = ['5', ABSENT, '1', '5', TWO_53_PLUS_1, '0'];
    const response = await entities(target, ids);
    expect(results(response)).toEqual([
      { id: '5', name: 'Pet 5' },
      null,
      { id: '1', name: 'Pet 1' },
      { id: '5', name: 'Pet 5' },
      { id: TWO_53_PLUS_1, name: 'Big Id' },
      null,
    ]);
    expect(operations(target)).toEqual(Array(FULL_SCAN).fill('listPets'));
  });

  it('stops the scan at the page that holds the last id of the batch', async () => {
    const target = await start('list');
    const response = await entities(target, ['150', '3', '101']);
    expect(results(response)).toEqual(['150', '3', '101'].map(expected));
    expect(operations(target)).toEqual(['listPets', 'listPets']);
  });
});

describe('PET_LOOKUP=legacy', () => {
  it('costs one deprecated getPet per id, absent ids included, and no list request', async () => {
    const target = await start('legacy');
    const ids = ['7', '250', ABSENT, TWO_53_PLUS_1];
    const response = await entities(target, ids);
    expect(results(response)).toEqual(ids.map(expected));
    expect(target.count('getPet')).toBe(4);
    expect(target.count('listPets')).toBe(0);
  });

  it('costs a getPet only for the ids that the operation’s own list did not carry', async () => {
    const target = await start('legacy');
    const response = await target.query(
      `{ pets(first: 5) { nodes { id } } a: pet(id: "2") { name } b: pet(id: "120") { name } c: pet(id: "${ABSENT}") { name } }`,
    );
    expect(response.body.data).toMatchObject({ a: { name: 'Pet 2' }, b: { name: 'Pet 120' }, c: null });
    expect(target.count('listPets')).toBe(1);
    expect(target.requests.filter((r) => r.operation === 'getPet')).toHaveLength(2);
  });
});

describe('PET_LOOKUP=auto', () => {
  it('with no full scan known, looks one id up with getPet (a scan costs at least as much), and a batch of five with one list page', async () => {
    const target = await start('auto');
    const single = await entities(target, [TWO_53_PLUS_1]);
    expect(results(single)).toEqual([expected(TWO_53_PLUS_1)]);
    // Priced as it cost: a scan for it would have read all three pages, priced one.
    expect(single.body.extensions?.cost).toEqual({ estimatedUpstreamRequests: 1, actualUpstreamRequests: 1 });
    const five = await entities(target, ['1', '2', '3', '4', '5']);
    expect(results(five)).toEqual(['1', '2', '3', '4', '5'].map(expected));
    expect(operations(target)).toEqual(['getPet', 'listPets']);
  });

  it(`once a full scan of ${FULL_SCAN} pages is known, uses getPet for a batch of fewer ids, and scans for as many`, async () => {
    const target = await start('auto');
    expect(results(await entities(target, [ABSENT, '999998']))).toEqual([null, null]);
    expect(operations(target)).toEqual(Array(FULL_SCAN).fill('listPets'));

    target.requests.length = 0;
    expect(results(await entities(target, ['210', '220']))).toEqual(['210', '220'].map(expected));
    expect(operations(target)).toEqual(['getPet', 'getPet']);

    target.requests.length = 0;
    expect(results(await entities(target, ['10', '20', '30']))).toEqual(['10', '20', '30'].map(expected));
    expect(operations(target)).toEqual(['listPets']);
  });
});

describe('the sunset date of GET /pets/{petId}', () => {
  it.each(['list', 'legacy', 'auto'])('%s: 0 deprecated calls on 5 December 2030', async (strategy) => {
    const target = await start(strategy, { gateway: { now: () => Date.UTC(2030, 11, 5) } });
    // For auto, a full scan is known afterwards, so without the sunset the next batches would use getPet.
    expect(results(await entities(target, [ABSENT]))).toEqual([null]);
    expect(results(await entities(target, ['250', '1']))).toEqual(['250', '1'].map(expected));
    expect(results(await aliased(target, ['3']))).toEqual([expected('3')]);
    expect(target.count('getPet')).toBe(0);
    expect(target.count('listPets')).toBe(FULL_SCAN + FULL_SCAN + 1);
  });
});

describe('lookups of pets the same operation lists', () => {
  it.each(['list', 'legacy', 'auto'])(
    '%s: a pet(id:) beside a pets list that carries it costs no request beyond the list',
    async (strategy) => {
      const target = await start(strategy);
      const response = await target.query('{ pets(first: 10) { nodes { id } } pet(id: "3") { id name } }');
      expect(response.body.data?.pet).toEqual({ id: '3', name: 'Pet 3' });
      expect(operations(target)).toEqual(['listPets']);
    },
  );
});

describe('API keys', () => {
  it('never share a loader: the same id in concurrent requests with two keys costs one scan per key, each with its key', async () => {
    const target = await start('list', {
      store: {
        keys: {
          [TEST_KEY]: { perMinute: 100_000, perDay: 1_000_000 },
          [OTHER_KEY]: { perMinute: 100_000, perDay: 1_000_000 },
        },
      },
    });
    const [mine, theirs] = await Promise.all([
      entities(target, ['150'], TEST_KEY),
      entities(target, ['150'], OTHER_KEY),
    ]);
    expect(results(mine)).toEqual([expected('150')]);
    expect(results(theirs)).toEqual([expected('150')]);
    const byKey = (key: string) => target.requests.filter((r) => r.key === key).map((r) => r.operation);
    expect(byKey(TEST_KEY)).toEqual(['listPets', 'listPets']);
    expect(byKey(OTHER_KEY)).toEqual(['listPets', 'listPets']);
    expect(target.requests).toHaveLength(4);
  });
});

describe('the deprecated endpoint', () => {
  function capture() {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
    return { lines, logger };
  }

  /** petstore_deprecated_calls_total for the getPet endpoint, read from /metrics. */
  async function deprecatedCalls(target: Stack): Promise<number> {
    const text = await (await fetch(new URL('/metrics', target.gateway.url))).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('petstore_deprecated_calls_total{endpoint="GET /v1/pets/{id}"}'));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  }

  it('is logged once with its sunset date however many legacy calls, and every call is counted', async () => {
    const { lines, logger } = capture();
    const target = await start('legacy', { gateway: { logger } });
    await entities(target, ['1', '2', '3']);
    await aliased(target, ['4', ABSENT]);
    expect(target.count('getPet')).toBe(5);
    expect(await deprecatedCalls(target)).toBe(5);
    const deprecations = lines.filter((line) => 'sunset' in line);
    expect(deprecations).toEqual([
      expect.objectContaining({
        level: 40,
        endpoint: 'GET /v1/pets/{id}',
        sunset: GET_PET_SUNSET,
        msg: `the Pet Store marks GET /v1/pets/{id} deprecated, sunset ${GET_PET_SUNSET}`,
      }),
    ]);
  });

  it('is never shown to GraphQL clients: no Deprecation or Sunset header, nothing in the body', async () => {
    const target = await start('legacy');
    const response = await entities(target, ['1', ABSENT]);
    expect(target.count('getPet')).toBe(2);
    expect(results(response)).toEqual([expected('1'), null]);
    expect(response.headers.get('deprecation')).toBeNull();
    expect(response.headers.get('sunset')).toBeNull();
    expect(JSON.stringify(response.body)).not.toMatch(/deprecat|sunset/i);
  });

  it('is neither counted nor logged when lookups scan the list', async () => {
    const { lines, logger } = capture();
    const target = await start('list', { gateway: { logger } });
    await entities(target, ['1', ABSENT]);
    expect(target.count('listPets')).toBe(FULL_SCAN);
    expect(await deprecatedCalls(target)).toBe(0);
    expect(lines.filter((line) => 'sunset' in line)).toEqual([]);
  });
});
