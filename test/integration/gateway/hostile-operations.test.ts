/**
 * Hostile operations are refused before they run: each gets a 4xx or GraphQL errors, quickly, with
 * no upstream request counted at the store, and the gateway stays healthy. Also the upstream-cost
 * estimate: an operation that would spend more than its share of the key's budget is refused.
 */

import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorCodes, gql } from '../../helpers/gql.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

let stack: Stack;
beforeAll(async () => {
  // The free plan's windows, so the per-operation share is the default 15 requests.
  stack = await startStack({ env: { PETSTORE_RATE_LIMITS: '60/1m,1000/1d' } });
});
afterAll(() => stack.close());
let before = 0;
beforeEach(() => {
  before = stack.count();
});

async function post(body: string, contentType = 'application/json') {
  const started = Date.now();
  const response = await fetch(stack.gateway.url, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await response.text();
  return { status: response.status, text, ms: Date.now() - started };
}

/** Refused: a 4xx, or errors with no data, fast, nothing sent upstream, and /health still answers. */
async function expectRefused(response: { status: number; text: string; ms: number }) {
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  // Fast: refused before any real work. Generous for a busy machine; an unguarded parse or
  // validation of these documents takes minutes.
  expect(response.ms).toBeLessThan(5_000);
  expect(stack.count() - before).toBe(0);
  const health = await fetch(new URL('/health', stack.gateway.url));
  expect(health.status).toBe(200);
}

const query = (text: string, variables?: unknown) => JSON.stringify({ query: text, variables });

describe('hostile operations', () => {
  it('refuses 200-deep nesting', async () => {
    const deep = `{ pets { edges { node { ${'category { '.repeat(200)}id${' }'.repeat(200)} } } } }`;
    const response = await post(query(deep));
    await expectRefused(response);
    expect(response.text).toMatch(/depth limit|Token limit|Cannot query field/);
  });

  it('refuses 1,000 aliases of pets(first: 100)', async () => {
    const aliases = Array.from({ length: 1_000 }, (_, i) => `a${i}: pets(first: 100) { nodes { id } }`).join(' ');
    await expectRefused(await post(query(`{ ${aliases} }`)));
  });

  it('refuses a 2 MB query with 413, before reading it all', async () => {
    const response = await post(query(`{ pets { nodes { id } } } # ${'x'.repeat(2 * 1024 * 1024)}`));
    expect(response.status).toBe(413);
    await expectRefused(response);
  });

  it('refuses circular fragments', async () => {
    const circular =
      'query { pets { ...A } } fragment A on PetConnection { ...B } fragment B on PetConnection { ...A }';
    const response = await post(query(circular));
    await expectRefused(response);
    expect(JSON.parse(response.text).errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it.each([
    ['a string for first', 'query Q($first: Int) { pets(first: $first) { nodes { id } } }', { first: 'ten' }],
    ['an object for an id', 'query Q($id: ID!) { pet(id: $id) { id } }', { id: { $gt: '' } }],
    ['a list for an id', 'query Q($id: ID!) { pet(id: $id) { id } }', { id: [1, 2] }],
    ['an unknown enum', 'query Q($s: PetStatus) { pets(status: $s) { nodes { id } } }', { s: 'HUNGRY' }],
    ['a missing input', 'mutation M($i: CreatePetInput!) { createPet(input: $i) { pet { id } } }', {}],
  ])('refuses wrong variable types: %s', async (_label, text, variables) => {
    const response = await post(query(text, variables));
    await expectRefused(response);
    expect(JSON.parse(response.text).errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it.each([
    ['CRLF', '1\r\nX-Injected: yes'],
    ['a path climb', '../../admin'],
    ['percent-encoded dots', '%2e%2e%2fadmin'],
    ['2^64', '18446744073709551616'],
    ['an empty string', ''],
    ['emoji', '🐶'],
  ])('refuses a pet id with %s as BAD_USER_INPUT, sending nothing', async (_label, id) => {
    const response = await gql(stack.gateway.url, 'query Q($id: ID!) { pet(id: $id) { id } }', { variables: { id } });
    expect(errorCodes(response)).toEqual(['BAD_USER_INPUT']);
    expect(stack.count() - before).toBe(0);
  });

  it('refuses batched HTTP requests unless configured', async () => {
    const batch = JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]);
    await expectRefused(await post(batch));
  });

  it('refuses a body that is not JSON, and a non-JSON content type (CSRF prevention)', async () => {
    await expectRefused(await post('{"query": '));
    await expectRefused(await post(query('{ pets { nodes { id } } }'), 'text/plain'));
  });

  it('reads a body whose bytes arrive in two packets that split a character, whatever the Content-Type case', async () => {
    // graphql-js names the character it cannot read: U+00EB ("ë") only if its two UTF-8 bytes were
    // decoded together; decoded packet by packet they would be two U+FFFD.
    const body = Buffer.from(query('{ ë }'), 'utf8');
    const cut = body.indexOf(0xc3) + 1;
    const gateway = new URL(stack.gateway.url);
    const socket = connect(Number(gateway.port), gateway.hostname);
    const head = `POST /graphql HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: Application/JSON; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const answer = new Promise<string>((resolve, reject) => {
      const parts: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => parts.push(chunk));
      socket.once('end', () => resolve(Buffer.concat(parts).toString('utf8')));
      socket.once('error', reject);
    });
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body.subarray(0, cut)]));
    // The second packet a moment later, so the gateway reads the body in two chunks (a machine too
    // busy to read in between hands it one chunk: the answer must be the same).
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.end(body.subarray(cut));
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(text).toContain('Syntax Error: Unexpected character: U+00EB.');
    expect(stack.count() - before).toBe(0);
  });
});

describe('the upstream-cost estimate', () => {
  // Distinct page sizes, so no two are one shared upstream request.
  const lists = (n: number) =>
    `{ ${Array.from({ length: n }, (_, i) => `a${i}: pets(first: ${i + 1}) { nodes { id } }`).join(' ')} }`;

  it('lets an operation spend up to a quarter of the smallest window (15 of 60 a minute)', async () => {
    // The gateway runs in this process: fifteen calls at once each listen to the operation's
    // signal, which must not make Node warn of a listener leak (it did, once per run, in CI's log).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const response = await gql(stack.gateway.url, lists(15));
      expect(response.body.errors).toBeUndefined();
      expect(stack.count() - before).toBe(15);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('refuses one estimated above it, saying why, with no upstream request', async () => {
    const response = await gql(stack.gateway.url, lists(16));
    expect(response.status).toBe(400);
    expect(errorCodes(response)).toEqual(['UPSTREAM_BUDGET_EXCEEDED']);
    expect(response.body.errors?.[0]?.message).toMatch(
      /about 16 upstream requests; one operation may spend at most 15/,
    );
    expect(response.body.errors?.[0]?.extensions).toMatchObject({
      estimatedUpstreamRequests: 16,
      maxUpstreamRequests: 15,
    });
    expect(stack.count() - before).toBe(0);
  });

  it('counts all pet lookups of an operation as one batch', async () => {
    const lookups = `{ ${Array.from({ length: 50 }, (_, i) => `p${i}: pet(id: "${i + 1}") { id }`).join(' ')} }`;
    const response = await gql(stack.gateway.url, lookups);
    expect(response.body.errors).toBeUndefined();
  });
});
