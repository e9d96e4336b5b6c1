/**
 * What one client can do to the gateway process itself, bounded: browser pages of other origins,
 * slow clients, too many connections, many keys with slow answers next to a normal key, client
 * faults that are not server errors, production hints, and /metrics behind a token.
 */

import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { createGateway, type GatewayHandle } from '../../../src/gateway/server.js';
import { errorCodes, gql } from '../../helpers/gql.js';
import { answer, page, startHostileUpstream } from '../../helpers/hostile-upstream.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';

const PETS = '{ pets(first: 2) { nodes { id } } }';
const EVIL = 'https://evil.example';

describe('CORS with a server key configured', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  const post = (origin: string | undefined, url = stack.gateway.url) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(origin ? { origin } : {}) },
      body: JSON.stringify({ query: PETS }),
    });

  it('refuses a page of another origin: preflight and POST, with no upstream request', async () => {
    const before = stack.count();
    const preflight = await fetch(stack.gateway.url, {
      method: 'OPTIONS',
      headers: {
        origin: EVIL,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const response = await post(EVIL);
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(await response.json()).toMatchObject({ errors: [{ extensions: { code: 'FORBIDDEN' } }] });
    expect(stack.count()).toBe(before);
  });

  it.each(['https://sandbox.embed.apollographql.com', 'https://studio.apollographql.com'])(
    'serves Apollo Sandbox at %s',
    async (origin) => {
      const response = await post(origin);
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(((await response.json()) as { errors?: unknown }).errors).toBeUndefined();
    },
  );

  it('serves same-origin pages on a loopback name, and clients that send no Origin', async () => {
    const url = new URL(stack.gateway.url);
    expect((await post(url.origin)).status).toBe(200);
    const localhost = new URL(stack.gateway.url);
    localhost.hostname = 'localhost';
    expect((await post(localhost.origin, localhost.href)).status).toBe(200);
    expect((await post(undefined)).status).toBe(200);
  });

  it('does not take a look-alike Host for same-origin (DNS rebinding)', async () => {
    // A page at http://evil.example:PORT whose name was made to resolve to the gateway.
    const port = new URL(stack.gateway.url).port;
    const response = await rawRequest(Number(port), [
      'POST /graphql HTTP/1.1',
      `Host: evil.example:${port}`,
      `Origin: http://evil.example:${port}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(JSON.stringify({ query: PETS }))}`,
      'Connection: close',
      '',
      JSON.stringify({ query: PETS }),
    ]);
    expect(response).toMatch(/^HTTP\/1\.1 403/);
  });
});

describe('slow and greedy clients', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: { HEADERS_TIMEOUT: '1s', REQUEST_TIMEOUT: '2s', KEEP_ALIVE_TIMEOUT: '500ms', MAX_CONNECTIONS: '20' },
    });
  });
  afterAll(() => stack.close());

  it('closes a header trickle and a body trickle within the configured times, and serves a normal client meanwhile', async () => {
    const port = Number(new URL(stack.gateway.url).port);
    const started = Date.now();
    const headers = trickle(port, ['POST /graphql HTTP/1.1', 'Host: x', 'Content-Type: application/json']);
    const body = trickle(port, [], {
      head: 'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
    });
    const normal = await gql(stack.gateway.url, PETS);
    expect(normal.body.errors).toBeUndefined();
    const [headersClosed, bodyClosed] = await Promise.all([headers, body]);
    // Node checks these timeouts once a second (connectionsCheckingInterval), hence the margin.
    expect(headersClosed - started).toBeLessThan(1_000 + 2_500);
    expect(bodyClosed - started).toBeLessThan(2_000 + 2_500);
  }, 20_000);

  it('closes an idle keep-alive connection after KEEP_ALIVE_TIMEOUT', async () => {
    const port = Number(new URL(stack.gateway.url).port);
    const socket = connect({ port, host: '127.0.0.1' });
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.resume(); // read the answer, so the server's FIN is seen
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    const started = Date.now();
    await new Promise((resolve) => socket.once('close', resolve));
    expect(Date.now() - started).toBeLessThan(500 + 2_500);
  });

  it('closes connections past MAX_CONNECTIONS at once, and serves again once they go', async () => {
    const port = Number(new URL(stack.gateway.url).port);
    const held: Socket[] = [];
    for (let i = 0; i < 20; i++) {
      const socket = connect({ port, host: '127.0.0.1' });
      await new Promise((resolve) => socket.once('connect', resolve));
      held.push(socket);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const extra = connect({ port, host: '127.0.0.1' });
    const closed = await new Promise<boolean>((resolve) => {
      extra.once('close', () => resolve(true));
      extra.once('data', () => resolve(false));
      extra.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    expect(closed).toBe(true);
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await fetch(new URL('/health', stack.gateway.url))).status).toBe(200);
    const metrics = await (await fetch(new URL('/metrics', stack.gateway.url))).text();
    expect(metrics).toMatch(/^petstore_http_connections_dropped_total [1-9]/m);
  });
});

describe('many keys with slow answers next to a normal key', () => {
  it("keep the normal key's latency within twice its unloaded latency", async () => {
    const upstream = await startHostileUpstream((req, res, { after }) => {
      const slow = req.headers.authorization?.startsWith('Bearer slow-');
      setTimeout(() => page(res, after, 1, undefined), slow ? 3_000 : 20);
    });
    const gateway = await createGateway(
      parseConfig({ PORT: '0', PETSTORE_BASE_URL: upstream.url, PETSTORE_RATE_LIMITS: 'off', LOG_LEVEL: 'silent' }),
      { host: '127.0.0.1' },
    );
    try {
      const timed = async () => {
        const started = performance.now();
        const response = await gql(gateway.url, PETS, { key: 'normal-key' });
        expect(response.body.errors).toBeUndefined();
        return performance.now() - started;
      };
      await timed();
      const unloaded = Math.min(await timed(), await timed(), await timed());
      const slow = Array.from({ length: 48 }, (_, i) =>
        gql(gateway.url, `{ pets(first: ${(i % 5) + 1}) { nodes { id } } }`, { key: `slow-${i}` }),
      );
      while (upstream.inFlight < 48) await new Promise((resolve) => setTimeout(resolve, 20));
      const loaded = Math.min(await timed(), await timed(), await timed());
      // Twice the unloaded latency, plus a few milliseconds: that latency is itself a few milliseconds.
      expect(loaded).toBeLessThan(2 * unloaded + 30);
      await Promise.all(slow);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  }, 20_000);
});

describe('client faults, production, metrics', () => {
  let production: GatewayHandle;
  let lines: string[];
  let upstream: Awaited<ReturnType<typeof startHostileUpstream>>;
  beforeAll(async () => {
    upstream = await startHostileUpstream((_req, res, { after }) => page(res, after, 2, undefined));
    lines = [];
    production = await createGateway(
      parseConfig({
        PORT: '0',
        PETSTORE_BASE_URL: upstream.url,
        PETSTORE_API_KEY: TEST_KEY,
        NODE_ENV: 'production',
        METRICS_TOKEN: 'a-metrics-token-for-tests',
      }),
      { host: '127.0.0.1', logger: createLogger('info', { write: (line: string) => void lines.push(line) }) },
    );
  });
  afterAll(async () => {
    await production.close();
    await upstream.close();
  });
  afterEach(() => {
    lines.length = 0;
  });

  it('logs a client that aborts mid-body at info level, without a stack', async () => {
    const port = Number(new URL(production.url).port);
    for (let i = 0; i < 5; i++) {
      const socket = connect({ port, host: '127.0.0.1' });
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(
        'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"qu',
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const errors = lines.filter((line) => /"level":(50|60)/.test(line));
    expect(errors).toEqual([]);
    expect(lines.filter((line) => line.includes('client went away')).length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain('"stack"');
  });

  it('answers a subscription and malformed representations with coded 400s', async () => {
    const subscription = await gql(production.url, 'subscription { x }');
    expect(subscription.status).toBe(400);
    expect(errorCodes(subscription)).toEqual(['BAD_REQUEST']);
    for (const representations of [[[1]], [1], ['Pet'], [{ id: '1' }], [{ __typename: 'Category', id: '1' }]]) {
      const response = await gql(
        production.url,
        'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Pet { id } } }',
        { variables: { r: representations } },
      );
      expect(response.status).toBe(400);
      expect(errorCodes(response)).toEqual(['BAD_USER_INPUT']);
    }
    expect(lines.filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
  });

  it('gives no "Did you mean" in production, in validation or in variable coercion', async () => {
    for (const [query, variables] of [
      ['query ($s: PetStatus) { pets(status: $s) { nodes { id } } }', { s: 'AVAILABL' }],
      ['mutation ($i: CreatePetInput!) { createPet(input: $i) { pet { id } } }', { i: { nam: 'x', categoryId: '1' } }],
      ['{ pets { nodes { nme } } }', {}],
      ['{ pets(firts: 1) { nodes { id } } }', {}],
    ] as const) {
      const response = await gql(production.url, query, { variables });
      expect(response.body.errors?.length).toBeGreaterThan(0);
      expect(JSON.stringify(response.body)).not.toContain('Did you mean');
    }
  });

  it('serves /metrics only with the token', async () => {
    const metrics = new URL('/metrics', production.url);
    expect((await fetch(metrics)).status).toBe(401);
    expect((await fetch(metrics, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const allowed = await fetch(metrics, { headers: { authorization: 'Bearer a-metrics-token-for-tests' } });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('graphql_operations_total');
  });

  it('answers an upstream error without data with its code, logged once', async () => {
    upstream.behave((_req, res) => answer(res, 500, '{"code":"boom","message":"boom","status":500}'));
    expect(errorCodes(await gql(production.url, PETS))).toEqual(['UPSTREAM_UNAVAILABLE']);
    upstream.behave((_req, res, { after }) => page(res, after, 2, undefined));
  });
});

/** Sends `lines` slowly (a byte every 200 ms) after `head`; resolves when the server closes the socket. */
function trickle(port: number, lines: string[], options: { head?: string } = {}): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const text = `${options.head ?? ''}${lines.join('\r\n')}${options.head ? '{' : ''}`;
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.once('connect', () => {
      if (options.head) {
        socket.write(options.head);
        sent = options.head.length;
      }
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write(text[sent++ % text.length] ?? ' ');
      }, 200);
    });
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.once('close', () => {
      clearInterval(timer);
      resolve(Date.now());
    });
  });
}

/** One raw HTTP exchange: the status line and what follows, as text. */
function rawRequest(port: number, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
    });
    socket.once('close', () => resolve(text));
    socket.once('error', reject);
    socket.once('connect', () => socket.write(lines.join('\r\n')));
  });
}
