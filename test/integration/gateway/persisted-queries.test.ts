/**
 * Automatic persisted queries (Apollo Server's APQ, on by default): a client first sends only the
 * query's SHA-256, is told PERSISTED_QUERY_NOT_FOUND, sends the query with its hash once, and from
 * then on the hash alone runs it, by POST or by GET. A hash that is not the query's is refused with
 * BAD_REQUEST, and so is an `extensions.persistedQuery` of the wrong shape, with a message saying
 * what is wrong and no log line above debug (a client's mistake must not fill the log). Nothing is
 * sent upstream for an operation that does not run.
 */

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import type { Pet } from '../../../src/petstore/store.js';
import { errorCodes, type GqlResponse } from '../../helpers/gql.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

const SEED: readonly Pet[] = [
  { id: 1n, name: 'Ada', categoryId: 1n, status: 'available' },
  { id: 2n, name: 'Bo', categoryId: 2n, status: 'pending' },
];
let stack: Stack;
/** The gateway's log lines, every level. */
const lines: string[] = [];

beforeAll(async () => {
  stack = await startStack({
    store: { seed: SEED },
    gateway: { logger: createLogger('trace', { write: (line: string) => void lines.push(line) }) },
  });
});
afterAll(async () => {
  await stack.close();
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

async function post(body: Record<string, unknown>): Promise<GqlResponse> {
  const response = await fetch(stack.gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as GqlResponse['body'] };
}

it('runs a query by its hash once the query has been sent with it: the two-step round trip', async () => {
  // A query of its own (the cache is per process), so no other test has registered it.
  const query = '{ pets(first: 2) { nodes { id name } } apq: __typename }';
  const hash = sha256(query);

  const first = await post({ extensions: persisted(hash) });
  expect(errorCodes(first)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
  expect(first.body.data).toBeUndefined();
  expect(stack.count()).toBe(0);

  const second = await post({ query, extensions: persisted(hash) });
  expect(second.status).toBe(200);
  expect(second.body.errors).toBeUndefined();
  const pets = {
    pets: {
      nodes: [
        { id: '1', name: 'Ada' },
        { id: '2', name: 'Bo' },
      ],
    },
    apq: 'Query',
  };
  expect(second.body.data).toEqual(pets);
  expect(stack.count()).toBe(1);

  const third = await post({ extensions: persisted(hash) });
  expect(third.status).toBe(200);
  expect(third.body.data).toEqual(pets);

  // By GET too, as a CDN could cache it; GETs need a header that forces a preflight (CSRF prevention).
  const url = new URL(stack.gateway.url);
  url.searchParams.set('extensions', JSON.stringify(persisted(hash)));
  const get = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
  expect(get.status).toBe(200);
  expect(((await get.json()) as GqlResponse['body']).data).toEqual(pets);
});

it('refuses a hash that is not the query’s with BAD_REQUEST, and sends nothing upstream', async () => {
  const before = stack.count();
  const response = await post({
    query: '{ pets(first: 1) { nodes { id } } }',
    extensions: persisted(sha256('{ pets(first: 3) { nodes { id } } }')),
  });
  expect(response.status).toBe(400);
  expect(errorCodes(response)).toEqual(['BAD_REQUEST']);
  expect(response.body.errors?.[0]?.message).toBe('provided sha does not match query');
  expect(stack.count()).toBe(before);
});

it.each<[string, unknown, string]>([
  [
    '[]',
    [],
    'extensions.persistedQuery must be an object, { "version": 1, "sha256Hash": "<the document\'s SHA-256, 64 hex digits>" }; got an array',
  ],
  [
    '"x"',
    'x',
    'extensions.persistedQuery must be an object, { "version": 1, "sha256Hash": "<the document\'s SHA-256, 64 hex digits>" }; got a string',
  ],
  [
    '5',
    5,
    'extensions.persistedQuery must be an object, { "version": 1, "sha256Hash": "<the document\'s SHA-256, 64 hex digits>" }; got a number',
  ],
  [
    'true',
    true,
    'extensions.persistedQuery must be an object, { "version": 1, "sha256Hash": "<the document\'s SHA-256, 64 hex digits>" }; got true',
  ],
  [
    '{ version: 2 }',
    { version: 2 },
    'extensions.persistedQuery.version must be 1, the only version of automatic persisted queries; got 2',
  ],
  [
    '{ version: "1" }',
    { version: '1', sha256Hash: 'a'.repeat(64) },
    'extensions.persistedQuery.version must be 1, the only version of automatic persisted queries; got a string',
  ],
  [
    '{ version: 1 }',
    { version: 1 },
    "extensions.persistedQuery.sha256Hash must be the document's SHA-256 as 64 hex digits; got none",
  ],
  [
    'a hash that is not hex',
    { version: 1, sha256Hash: 'zz' },
    "extensions.persistedQuery.sha256Hash must be the document's SHA-256 as 64 hex digits; got a string of 2 characters",
  ],
])(
  'refuses extensions.persistedQuery %s with BAD_REQUEST saying what is wrong, by POST and GET, logging nothing above debug',
  async (_name, persistedQuery, message) => {
    const before = stack.count();
    const logged = lines.length;
    const url = new URL(stack.gateway.url);
    url.searchParams.set('extensions', JSON.stringify({ persistedQuery }));
    const get = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
    const responses = [
      await post({ extensions: { persistedQuery } }),
      await post({ query: '{ __typename }', extensions: { persistedQuery } }),
      { status: get.status, headers: get.headers, body: (await get.json()) as GqlResponse['body'] },
    ];
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] });
    }
    expect(stack.count()).toBe(before);
    const levels = lines.slice(logged).map((line) => (JSON.parse(line) as { level: number }).level);
    expect(levels.filter((level) => level > 20)).toEqual([]);
  },
);
