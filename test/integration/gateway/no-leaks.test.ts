/**
 * Nothing the gateway says leaks a credential, a stack trace or an upstream address: with two known
 * keys (a client's bearer key and the configured PETSTORE_API_KEY) and every log line captured at
 * LOG_LEVEL=trace, successful, refused and failing operations (including an upstream that echoes the
 * Authorization header back) never show either key in a log line, a response body or a header.
 * In production an unexpected error is masked and field suggestions are off; CSRF prevention is on.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { formatError } from '../../../src/gateway/graphql/format-error.js';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { createGateway, type GatewayHandle } from '../../../src/gateway/server.js';
import type { Pet } from '../../../src/petstore/store.js';
import { errorCodes, type GqlResponse } from '../../helpers/gql.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';
import { refusedBaseUrl, sendRaw, startUpstream, type Upstream } from '../../helpers/upstream.js';

const CLIENT_KEY = 'client-secret-7f3a9c1e';
const CONFIGURED_KEY = 'configured-secret-4b2e81d0';
const KEYS = [CLIENT_KEY, CONFIGURED_KEY];
const ROOMY = { perMinute: 100_000, perDay: 1_000_000 };

const SEED: readonly Pet[] = [
  { id: 1n, name: 'Ada', categoryId: 1n, status: 'available' },
  { id: 2n, name: 'Bo', categoryId: 2n, status: 'pending' },
];

/** Every operation kind: lists, lookups (through the deprecated endpoint, which is logged), creation, refusals. */
const OPERATIONS: readonly string[] = [
  '{ pets(first: 2) { edges { cursor node { id name status category { id } } } pageInfo { hasNextPage endCursor } } }',
  '{ pet(id: "1") { id name } missing: pet(id: "404") { id } }',
  'mutation { createPet(input: { name: "Rex", categoryId: "1", status: PENDING }) { pet { id name status } } }',
  'mutation { createPet(input: { name: "", categoryId: "1" }) { pet { id } } }',
  '{ pets(first: 500) { nodes { id } } }',
  '{ pet(id: "not-an-id") { id } }',
  '{ pets(after: "forged") { nodes { id } } }',
  '{ pets { nodez { id } } }',
  '{ pets { ',
  '{ __schema { queryType { name } } }',
  '{ _service { sdl } }',
];

/** Client credentials to send each operation with: none (the configured key is used), the client's, a bad scheme. */
const AUTHORIZATIONS: readonly (string | undefined)[] = [
  undefined,
  `Bearer ${CLIENT_KEY}`,
  `bearer ${CLIENT_KEY}`,
  `Basic ${CLIENT_KEY}`,
  `Bearer ${CLIENT_KEY} extra`,
];

interface Captured {
  readonly lines: string[];
  readonly texts: string[];
}

function captureLogger(captured: Captured) {
  return createLogger('trace', {
    write(line: string) {
      captured.lines.push(line);
    },
  });
}

/** Sends `query` by POST and records the whole response, headers included, as text. */
async function send(url: string, captured: Captured, query: string, authorization?: string): Promise<GqlResponse> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  captured.texts.push(text, JSON.stringify([...response.headers]));
  return { status: response.status, headers: response.headers, body: JSON.parse(text) };
}

async function fetchText(url: string, captured: Captured, init?: RequestInit): Promise<number> {
  const response = await fetch(url, init);
  captured.texts.push(await response.text(), JSON.stringify([...response.headers]));
  return response.status;
}

function expectNoKey(captured: Captured): void {
  for (const text of [...captured.lines, ...captured.texts]) {
    for (const key of KEYS) expect(text).not.toContain(key);
  }
}

describe('no key in any log line, response body or header', () => {
  const captured: Captured = { lines: [], texts: [] };
  let stack: Stack;
  let echo: Upstream;
  const gateways: GatewayHandle[] = [];

  /** A gateway with LOG_LEVEL=trace and the configured key, in front of `baseUrl`, its logs captured. */
  async function gatewayFor(baseUrl: string, env: Record<string, string> = {}): Promise<GatewayHandle> {
    const config = parseConfig({
      PORT: '0',
      PETSTORE_BASE_URL: baseUrl,
      PETSTORE_API_KEY: CONFIGURED_KEY,
      PETSTORE_RATE_LIMITS: 'off',
      PETSTORE_TIMEOUT: '200ms',
      LOG_LEVEL: 'trace',
      ...env,
    });
    const gateway = await createGateway(config, { host: '127.0.0.1', logger: captureLogger(captured) });
    gateways.push(gateway);
    return gateway;
  }

  beforeAll(async () => {
    stack = await startStack({
      store: { keys: { [CLIENT_KEY]: ROOMY, [CONFIGURED_KEY]: ROOMY }, seed: SEED },
      env: { PETSTORE_API_KEY: CONFIGURED_KEY, LOG_LEVEL: 'trace', PET_LOOKUP: 'legacy' },
      gateway: { logger: captureLogger(captured) },
    });
    // An upstream that echoes the credential it received everywhere it can: error messages, bodies, headers.
    echo = await startUpstream((req: IncomingMessage, res: ServerResponse) => {
      const credential = req.headers.authorization ?? '';
      const headers = { 'content-type': 'application/json', 'x-echo': credential };
      const error = (status: number) => JSON.stringify({ code: credential, message: `refused ${credential}`, status });
      if (req.url?.includes('limit=1&')) return sendRaw(res, 400, error(400), headers);
      if (req.url?.includes('limit=2&')) return sendRaw(res, 401, error(401), headers);
      if (req.url?.includes('limit=3&')) return sendRaw(res, 500, error(500), headers);
      if (req.url?.includes('limit=4&')) return sendRaw(res, 200, `<html>${credential}</html>`, headers);
      if (req.method === 'POST') return sendRaw(res, 429, error(429), { ...headers, 'retry-after': '3600' });
      sendRaw(res, 200, '[{"id":1,"name":"Rex","categoryId":1}]', headers);
    });
  });
  afterAll(async () => {
    for (const gateway of gateways) await gateway.close();
    await stack.close();
    await echo.close();
  });

  it('never shows a key for any operation, sent with no key, the client key or a malformed Authorization', async () => {
    for (const authorization of AUTHORIZATIONS) {
      for (const query of OPERATIONS) await send(stack.gateway.url, captured, query, authorization);
    }
    const base = stack.gateway.url.replace(/\/graphql$/, '');
    const get = `${stack.gateway.url}?query=${encodeURIComponent('{ pets { nodes { id } } }')}`;
    await fetchText(get, captured, { headers: { 'apollo-require-preflight': 'true' } });
    await fetchText(get, captured, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    await fetchText(`${base}/metrics`, captured);
    await fetchText(`${base}/health`, captured);
    expect(stack.count('createPet')).toBeGreaterThan(0);
    expect(stack.requests.map((record) => record.key)).toContain(CLIENT_KEY);
    expect(stack.requests.map((record) => record.key)).toContain(CONFIGURED_KEY);
    expect(captured.lines.join('')).toContain('deprecated');
    expectNoKey(captured);
  });

  it('never shows a key when the upstream fails: refused, timed out, 5xx, or echoing the credential back', async () => {
    const refused = await gatewayFor(await refusedBaseUrl());
    const silent = await startUpstream(() => {});
    try {
      const slow = await gatewayFor(`${silent.origin}/v1`);
      const echoing = await gatewayFor(`${echo.origin}/v1`);
      for (const authorization of [undefined, `Bearer ${CLIENT_KEY}`]) {
        for (const gateway of [refused, slow]) {
          const response = await send(gateway.url, captured, '{ pets { nodes { id } } }', authorization);
          expect(errorCodes(response)).toEqual(['UPSTREAM_UNAVAILABLE']);
        }
        const expected: [number, string][] = [
          [1, 'BAD_USER_INPUT'],
          [3, 'UPSTREAM_UNAVAILABLE'],
          [4, 'UPSTREAM_UNAVAILABLE'],
        ];
        for (const [first, code] of expected) {
          const query = `{ pets(first: ${first}, status: SOLD) { nodes { id name } } }`;
          expect(errorCodes(await send(echoing.url, captured, query, authorization))).toEqual([code]);
        }
        // A 401 and a 429 each change what the gateway does next for the key (a refusal remembered,
        // a pause), so each gets a gateway of its own.
        const refusing = await gatewayFor(`${echo.origin}/v1`);
        const unauthorized = '{ pets(first: 2, status: SOLD) { nodes { id name } } }';
        expect(errorCodes(await send(refusing.url, captured, unauthorized, authorization))).toEqual([
          'UNAUTHENTICATED',
        ]);
        const limiting = await gatewayFor(`${echo.origin}/v1`);
        const created = await send(limiting.url, captured, OPERATIONS[2] as string, authorization);
        expect(errorCodes(created)).toEqual(['RATE_LIMITED']);
      }
      expect(echo.requests.map((request) => request.authorization)).toContain(`Bearer ${CONFIGURED_KEY}`);
      expect(captured.lines.join('')).toContain('upstream request failed');
      expectNoKey(captured);
    } finally {
      await silent.close();
    }
  });
});

describe('production', () => {
  let production: Stack;
  let development: Stack;

  beforeAll(async () => {
    [production, development] = await Promise.all([
      startStack({ store: { seed: SEED }, env: { NODE_ENV: 'production' } }),
      startStack({ store: { seed: SEED }, env: { NODE_ENV: 'development' } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([production.close(), development.close()]);
  });

  // What used to reach a client as an unexpected error (a representation of a type this subgraph
  // does not resolve made @apollo/subgraph throw a plain Error) is now refused with a code of its own,
  // naming nothing internal.
  it('refuses an entity of an unknown type with BAD_USER_INPUT: no stack, no internal message, no path', async () => {
    const query = '{ _entities(representations: [{ __typename: "Nope", id: "1" }]) { __typename } }';
    const response = await production.query(query);
    expect(response.status).toBe(400);
    expect(errorCodes(response)).toEqual(['BAD_USER_INPUT']);
    expect(JSON.stringify(response.body)).not.toMatch(/stacktrace|\.ts:|node_modules|127\.0\.0\.1/);
  });

  it('logs every masked error once, with its cause (format-error.ts)', () => {
    const logged: unknown[] = [];
    const cause = new TypeError('cannot read properties of undefined');
    const formatted = formatError({ message: 'cannot read properties of undefined' }, cause, {
      development: false,
      production: true,
      logger: { error: (fields: unknown) => void logged.push(fields) },
    });
    expect(formatted).toEqual({ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    expect(logged).toEqual([expect.objectContaining({ err: cause })]);
  });

  it('gives no field or argument suggestions in production, and does outside it', async () => {
    for (const query of [
      '{ pets { nodez { id } } }',
      '{ pet(id: "1") { nam } }',
      '{ pets(firts: 1) { nodes { id } } }',
    ]) {
      const response = await production.query(query);
      expect(errorCodes(response)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
      expect(response.body.errors?.[0]?.message).not.toContain('Did you mean');
      expect((await development.query(query)).body.errors?.[0]?.message).toContain('Did you mean');
    }
  });

  it("refuses introspection naming the gateway's setting, INTROSPECTION=true, not Apollo's constructor option", async () => {
    const response = await production.query('{ __schema { queryType { name } } }');
    expect(response.status).toBe(400);
    expect(errorCodes(response)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(response.body.errors?.[0]?.message).toBe(
      'GraphQL introspection is off, and the query contained __schema or __type; set INTROSPECTION=true on the gateway to allow it',
    );
    expect(JSON.stringify(response.body)).not.toContain('ApolloServer');
    // Outside production introspection is on by default.
    expect((await development.query('{ __schema { queryType { name } } }')).body.data).toEqual({
      __schema: { queryType: { name: 'Query' } },
    });
  });

  it('refuses a GET query without a preflight header, and a POST as text/plain, as possible CSRF', async () => {
    production.requests.length = 0;
    const get = await fetch(`${production.gateway.url}?query=${encodeURIComponent('{ pet(id: "1") { id } }')}`);
    const post = await fetch(production.gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ query: 'mutation { createPet(input: { name: "C", categoryId: "1" }) { pet { id } } }' }),
    });
    for (const response of [get, post]) {
      expect(response.status).toBe(400);
      const body = (await response.json()) as GqlResponse['body'];
      expect(body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
      expect(body.errors?.[0]?.message).toContain('CSRF');
    }
    expect(production.requests).toEqual([]);
    expect(production.store.catalogue.size).toBe(SEED.length);
    // The same GET with a preflight header is served.
    const allowed = await fetch(`${production.gateway.url}?query=${encodeURIComponent('{ pet(id: "1") { id } }')}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(((await allowed.json()) as GqlResponse['body']).data).toEqual({ pet: { id: '1' } });
  });
});
