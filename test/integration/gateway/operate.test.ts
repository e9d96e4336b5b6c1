/**
 * Operating the gateway: /metrics after known traffic, request ids carried upstream, identical
 * upstream GETs in flight shared within a key and never across keys, and the per-key cache.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { keyIdOf } from '../../../src/gateway/shared/key-id.js';
import { errorCodes } from '../../helpers/gql.js';
import { type Stack, type StackOptions, startStack, TEST_KEY } from '../../helpers/start-stack.js';

const OTHER_KEY = 'other-key-9876543210';
const ROOMY = { perMinute: 100_000, perDay: 1_000_000 };
const PETS = '{ pets(first: 3) { nodes { id name } } }';
const STILL = Date.UTC(2030, 0, 1, 0, 0, 15);
let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(options: StackOptions = {}): Promise<Stack> {
  stack = await startStack({
    ...options,
    store: { keys: { [TEST_KEY]: ROOMY, [OTHER_KEY]: ROOMY }, ...options.store },
  });
  return stack;
}

async function scrape(target: Stack, token?: string): Promise<string> {
  const response = await fetch(new URL('/metrics', target.gateway.url), {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return response.text();
}

/** The value of one sample line, e.g. `metric{a="b"}`; 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('/metrics', () => {
  it('counts operations, upstream requests, 429s, batches and deprecated calls after known traffic', async () => {
    const target = await start({
      // A store clock that stands still 15 s into a minute, so no window rolls over mid-test.
      store: { keys: { [TEST_KEY]: { perMinute: 3, perDay: 1_000 } }, seed: [], now: () => STILL },
      env: { PETSTORE_RATE_LIMITS: 'off', PET_LOOKUP: 'legacy', PETSTORE_MAX_WAIT: '1s' },
    });
    await target.query('query ListThem { pets(first: 2) { nodes { id } } }');
    await target.query('mutation Add { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }');
    await target.query('query FindThem { a: pet(id: "1") { id } b: pet(id: "2") { id } }');
    const limited = await target.query('query ListThem { pets(first: 5) { nodes { id } } }');
    expect(errorCodes(limited)).toEqual(['RATE_LIMITED']);

    const text = await scrape(target);
    expect(sample(text, 'graphql_operations_total{type="query",outcome="ok"}')).toBe(1);
    expect(sample(text, 'graphql_operations_total{type="query",outcome="RATE_LIMITED"}')).toBe(2);
    expect(sample(text, 'graphql_operations_total{type="mutation",outcome="ok"}')).toBe(1);
    expect(sample(text, 'petstore_upstream_requests_total{route="listPets",status="200"}')).toBe(1);
    expect(sample(text, 'petstore_upstream_requests_total{route="createPet",status="201"}')).toBe(1);
    // Two legacy lookups spend the last request of the minute and meet the limit on the other.
    expect(sample(text, 'petstore_upstream_requests_total{route="getPet",status="200"}')).toBe(1);
    expect(sample(text, 'petstore_upstream_429_total')).toBe(1);
    expect(sample(text, 'petstore_pet_loader_batch_size_count')).toBe(1);
    expect(sample(text, 'petstore_pet_loader_batch_size_sum')).toBe(2);
    expect(sample(text, 'petstore_deprecated_calls_total{endpoint="GET /v1/pets/{id}"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'petstore_upstream_requests_total{route="getPet",status="429"}')).toBe(1);
    // The last list is refused by the pause the 429 set, without an upstream request.
    expect(sample(text, 'petstore_upstream_request_duration_seconds_count{route="listPets"}')).toBe(1);
    expect(text).not.toContain(TEST_KEY);
  });

  it('labels operations by type and outcome only: no name a client chose, however many', async () => {
    const target = await start();
    await target.query('query ListThem { pets(first: 2) { nodes { id } } }');
    await target.query('mutation Add { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }');
    for (let i = 0; i < 20; i++) await target.query(`query Tenant${i}Secret { pets(first: 1) { nodes { id } } }`);
    await target.query('{ pets(first: 1) { nodes { nme } } }');
    await target.query('query NotParsed {');
    const text = await scrape(target);
    expect(text).not.toMatch(/ListThem|Add"|Secret|NotParsed|anonymous/);
    const series = [...text.matchAll(/^graphql_operations_total(\{.*\}) \d+$/gm)].map((match) => match[1]).sort();
    expect(series).toEqual([
      '{type="mutation",outcome="ok"}',
      '{type="none",outcome="GRAPHQL_PARSE_FAILED"}',
      '{type="none",outcome="GRAPHQL_VALIDATION_FAILED"}',
      '{type="query",outcome="ok"}',
    ]);
    expect(sample(text, 'graphql_operations_total{type="query",outcome="ok"}')).toBe(21);
  });

  it('keeps the budget gauges (facts about the tenants) off /metrics without METRICS_TOKEN', async () => {
    const target = await start({ env: { PETSTORE_RATE_LIMITS: '60/1m' } });
    await target.query(PETS);
    const text = await scrape(target);
    expect(text).not.toMatch(/^petstore_budget_/m);
    // What the process and its traffic are, in aggregate, stays.
    expect(sample(text, 'petstore_upstream_requests_total{route="listPets",status="200"}')).toBe(1);
  });

  it('reports budget aggregates behind METRICS_TOKEN, never a key or its digest', async () => {
    const target = await start({ env: { PETSTORE_RATE_LIMITS: '60/1m', METRICS_TOKEN: 'a-metrics-token-for-tests' } });
    await target.query(PETS);
    const text = await scrape(target, 'a-metrics-token-for-tests');
    expect(sample(text, 'petstore_budget_keys')).toBe(1);
    expect(sample(text, 'petstore_budget_keys_paused')).toBe(0);
    expect(sample(text, 'petstore_budget_lowest_remaining')).toBeGreaterThan(0);
    expect(text).not.toContain(TEST_KEY);
    expect(text).not.toContain(keyIdOf(TEST_KEY));
  });
});

describe('request ids', () => {
  it('keeps a client X-Request-Id, echoes it, sends it upstream and writes it on log lines', async () => {
    const lines: string[] = [];
    const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
    const real = await start({ gateway: { logger } });
    const response = await fetch(real.gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'trace-42' },
      body: JSON.stringify({ query: '{ pet(id: "abc") { id } pets(first: 1) { nodes { id } } }' }),
    });
    expect(response.headers.get('x-request-id')).toBe('trace-42');
    expect(real.requests.map((record) => record.requestId)).toEqual(['trace-42']);
    const generated = await fetch(real.gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'bad id\twith spaces' },
      body: JSON.stringify({ query: '{ pets(first: 1) { nodes { id } } }' }),
    });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(real.requests[1]?.requestId).toBe(generated.headers.get('x-request-id'));
    // Each operation's debug line is written by that request's logger, so it names the request.
    const tagged = lines.map((line) => JSON.parse(line) as { reqId?: string; msg?: string });
    const operations = tagged.filter((line) => line.msg === 'graphql operation').map((line) => line.reqId);
    expect(operations).toEqual(['trace-42', generated.headers.get('x-request-id')]);
  });
});

describe('sharing upstream GETs', () => {
  it('makes two concurrent queries for one key that need the same page cost one upstream request', async () => {
    const target = await start({ store: { responseDelayMs: 100 } });
    // Two different queries (identical ones would share one execution: shared-executions.test.ts).
    const [a, b] = await Promise.all([target.query(PETS), target.query('{ pets(first: 3) { nodes { name id } } }')]);
    expect(a.body.data).toEqual(b.body.data);
    expect(target.count('listPets')).toBe(1);
    expect(sample(await scrape(target), 'petstore_coalesced_requests_total')).toBe(1);
  });

  it('never shares between keys: the same query for two keys costs two, each with its own key', async () => {
    const target = await start({ store: { responseDelayMs: 100 } });
    await Promise.all([target.query(PETS, { key: TEST_KEY }), target.query(PETS, { key: OTHER_KEY })]);
    expect(target.requests.map((record) => record.key).sort()).toEqual([OTHER_KEY, TEST_KEY].sort());
  });

  it('caches per key with PETSTORE_CACHE_TTL, never serving one key another key’s answer', async () => {
    const target = await start({ env: { PETSTORE_CACHE_TTL: '1m' } });
    await target.query(PETS, { key: TEST_KEY });
    await target.query(PETS, { key: TEST_KEY });
    expect(target.count('listPets')).toBe(1);
    await target.query(PETS, { key: OTHER_KEY });
    expect(target.requests.map((record) => record.key)).toEqual([TEST_KEY, OTHER_KEY]);
    expect(sample(await scrape(target), 'petstore_cache_hits_total')).toBe(1);
  });

  it('drops the key’s cached answers when it creates a pet, so the next list shows the new pet', async () => {
    const target = await start({ store: { seed: [] }, env: { PETSTORE_CACHE_TTL: '1m' } });
    const before = await target.query(PETS);
    expect(before.body.data?.pets.nodes).toEqual([]);
    await target.query('mutation { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }');
    const after = await target.query(PETS);
    expect(after.body.data?.pets.nodes).toEqual([{ id: '1', name: 'Rex' }]);
    expect(target.count('listPets')).toBe(2);
  });

  it('caches nothing by default', async () => {
    const target = await start();
    await target.query(PETS);
    await target.query(PETS);
    expect(target.count('listPets')).toBe(2);
  });
});
