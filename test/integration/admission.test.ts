/**
 * How many operations of one key run at once (PETSTORE_MAX_RUNNING, src/gateway/admission.ts): the
 * rest wait their turn before they execute, another key is never held behind them, a wait ends at
 * PETSTORE_MAX_WAIT with HTTP 429, a client that leaves while waiting costs nothing upstream and
 * frees nothing it did not hold, and an operation waiting for budget gives its turn up. The
 * upstream is the scripted one of the budget tests, which holds answers until the test lets them
 * go, so "running" is a fact of the test, not a race with the clock.
 */

import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/gateway/logger.js';
import { createGateway } from '../../src/gateway/server.js';
import { errorCodes, type GqlResponse, gql } from '../helpers/gql.js';
import { type HostileUpstream, page, startHostileUpstream } from '../helpers/hostile-upstream.js';
import { type GatewayUnderTest, startGateway, UPSTREAM_KEY } from '../helpers/upstream.js';

const OTHER_KEY = 'another-key-0123456789';
/** A distinct query per call, so that none shares another's execution or GET. */
const query = (first: number) => `{ pets(first: ${first}) { nodes { id } } }`;

let upstream: HostileUpstream;
/** Answers the upstream holds until `release()`. */
let held: (() => void)[] = [];

beforeAll(async () => {
  upstream = await startHostileUpstream();
});
afterAll(async () => {
  release();
  await upstream.close();
});
beforeEach(() => {
  release();
  upstream.reset();
  upstream.behave((_request, response, { after }) => hold(response, () => page(response, after, 3, undefined)));
});

function hold(response: ServerResponse, send: () => void): void {
  held.push(() => {
    if (!response.destroyed) send();
  });
}

function release(): void {
  const answers = held;
  held = [];
  for (const send of answers) send();
}

/** Polls until `condition` holds; a loaded machine gets ten seconds. */
async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function metric(gateway: GatewayUnderTest, series: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', gateway.gateway.url))).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const waiting = (gateway: GatewayUnderTest) => metric(gateway, 'graphql_operations_waiting');

describe('PETSTORE_MAX_RUNNING', () => {
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    gateway = await startGateway(upstream.url, { PETSTORE_MAX_RUNNING: '2', PETSTORE_COALESCE: 'false' });
  });
  afterAll(() => gateway.close());
  afterEach(release);

  it('runs at most that many operations of one key at once; the rest run in turn, all answered', async () => {
    const answers = Array.from({ length: 6 }, (_, index) => gateway.query(query(index + 1)));
    for (let answered = 0; answered < 6; answered += 2) {
      await until(() => upstream.inFlight === 2);
      // The others wait before they run: none of them has reached the upstream.
      expect(await waiting(gateway)).toBe(4 - answered);
      expect(upstream.requests).toHaveLength(answered + 2);
      release();
      await until(() => upstream.inFlight === 0);
    }
    const responses = await Promise.all(answers);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(responses.every((response) => errorCodes(response).length === 0)).toBe(true);
    expect(upstream.maxConcurrent).toBe(2);
    expect(await metric(gateway, 'graphql_operations_running')).toBe(0);
  });

  it('never holds another key behind them', async () => {
    const mine = [1, 2, 3].map((first) => gateway.query(query(first)));
    await until(async () => upstream.inFlight === 2 && (await waiting(gateway)) === 1);
    const other = gateway.query(query(4), { key: OTHER_KEY });
    await until(() => upstream.inFlight === 3);
    expect(upstream.requests.map((request) => request.authorization)).toContain(`Bearer ${OTHER_KEY}`);
    release();
    await until(() => upstream.inFlight === 1);
    release();
    const responses = await Promise.all([...mine, other]);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200]);
  });

  it('costs nothing upstream for a client that leaves while it waits, and its turn is not lost', async () => {
    const running = [1, 2].map((first) => gateway.query(query(first)));
    await until(() => upstream.inFlight === 2);
    const leaving = new AbortController();
    const gone = fetch(gateway.gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: query(3) }),
      signal: leaving.signal,
    }).catch(() => 'gone');
    await until(async () => (await waiting(gateway)) === 1);
    leaving.abort();
    expect(await gone).toBe('gone');
    await until(async () => (await waiting(gateway)) === 0);
    release();
    await Promise.all(running);
    // Two turns free again: two more run at once, and the one that left was never sent.
    const next = [4, 5].map((first) => gateway.query(query(first)));
    await until(() => upstream.inFlight === 2);
    release();
    expect((await Promise.all(next)).map((response) => response.status)).toEqual([200, 200]);
    expect(upstream.requests.map((request) => new URL(request.path, 'http://x').searchParams.get('limit'))).toEqual([
      '1',
      '2',
      '4',
      '5',
    ]);
  });
});

describe('a client that leaves while its operation waits', () => {
  it('is no fault of the gateway: nothing is logged above info', async () => {
    const lines: { level: number; msg: string }[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const config = parseConfig({
      PORT: '0',
      PETSTORE_BASE_URL: upstream.url,
      PETSTORE_API_KEY: UPSTREAM_KEY,
      PETSTORE_RATE_LIMITS: 'off',
      PETSTORE_MAX_RUNNING: '1',
      PETSTORE_COALESCE: 'false',
    });
    const gateway = await createGateway(config, { host: '127.0.0.1', logger: createLogger('info', sink) });
    try {
      const first = gql(gateway.url, query(1));
      await until(() => upstream.inFlight === 1);
      const leaving = new AbortController();
      const gone = fetch(gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: query(2) }),
        signal: leaving.signal,
      }).catch(() => 'gone');
      const waitingNow = async () => {
        const text = await (await fetch(new URL('/metrics', gateway.url))).text();
        return /^graphql_operations_waiting 1$/m.test(text);
      };
      await until(waitingNow);
      leaving.abort();
      expect(await gone).toBe('gone');
      await until(async () => !(await waitingNow()));
      release();
      expect((await first).status).toBe(200);
      expect(lines.filter((line) => line.level > 30)).toEqual([]);
    } finally {
      await gateway.close();
    }
  });
});

describe('a wait for a turn past PETSTORE_MAX_WAIT', () => {
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    gateway = await startGateway(upstream.url, {
      PETSTORE_MAX_RUNNING: '1',
      PETSTORE_MAX_WAIT: '300ms',
      PETSTORE_COALESCE: 'false',
    });
  });
  afterAll(() => gateway.close());
  afterEach(release);

  it('is refused as a whole: HTTP 429, Retry-After, RATE_LIMITED, nothing sent for it', async () => {
    const refusedBefore = await metric(gateway, 'petstore_limiter_rejected_total{reason="running"}');
    const first = gateway.query(query(1));
    await until(() => upstream.inFlight === 1);
    const refused: GqlResponse = await gateway.query(query(2));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.data).toBeUndefined();
    expect(errorCodes(refused)).toEqual(['RATE_LIMITED']);
    expect(refused.body.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', retryAfter: 1 });
    expect((await metric(gateway, 'petstore_limiter_rejected_total{reason="running"}')) - refusedBefore).toBe(1);
    release();
    expect((await first).status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
  });
});

describe('an operation waiting for budget', () => {
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    gateway = await startGateway(upstream.url, {
      PETSTORE_MAX_RUNNING: '1',
      // One request per 2 s: the second operation waits for budget, well inside its wait of 5 s.
      PETSTORE_RATE_LIMITS: '1/2s',
      MAX_BUDGET_SHARE: '1',
      PETSTORE_MAX_WAIT: '5s',
      PETSTORE_COALESCE: 'false',
    });
  });
  afterAll(() => gateway.close());

  it('gives its turn up: an operation that needs no budget runs meanwhile', async () => {
    // Answered at once from here on: this test is about the budget, not a held upstream.
    upstream.behave((_request, response, { after }) => page(response, after, 3, undefined));
    expect((await gateway.query(query(1))).status).toBe(200);
    const order: string[] = [];
    const budgeted = gateway.query(query(2)).then((response) => {
      order.push('budgeted');
      return response;
    });
    await until(async () => (await metric(gateway, 'petstore_limiter_throttled_total')) === 1);
    const free = gateway.query('{ __typename }').then((response) => {
      order.push('free');
      return response;
    });
    const [paid, unpaid] = await Promise.all([budgeted, free]);
    expect(order).toEqual(['free', 'budgeted']);
    expect(paid.status).toBe(200);
    expect(unpaid.body.data).toEqual({ __typename: 'Query' });
  });
});
