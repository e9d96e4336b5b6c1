/**
 * Identical queries in flight for one key share one execution (src/gateway/edge/shared-executions.ts):
 * the gateway answers them all from one run of Apollo Server, and never shares what it must not:
 * across keys, across content negotiation, a mutation, or an execution that started before a write
 * of the key ended. Its upstream is the scripted one of the budget tests, which holds answers until
 * the test lets them go, so "in flight" is a fact of the test, not a race with the clock.
 */

import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GqlResponse } from '../../helpers/gql.js';
import { answer, type HostileUpstream, page, petJson, startHostileUpstream } from '../../helpers/hostile-upstream.js';
import { type GatewayUnderTest, startGateway, UPSTREAM_KEY } from '../../helpers/upstream.js';

const QUERY = '{ pets(first: 5) { nodes { id name } } }';
const CREATE = 'mutation { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }';
const OTHER_KEY = 'another-key-0123456789';

let upstream: HostileUpstream;
let gateway: GatewayUnderTest;
/** Answers the upstream holds until `release()`. */
let held: (() => void)[] = [];
let writes = 0;

beforeAll(async () => {
  upstream = await startHostileUpstream();
  gateway = await startGateway(upstream.url);
});
afterAll(async () => {
  release();
  await gateway.close();
  await upstream.close();
});
beforeEach(() => {
  release();
  upstream.reset();
  writes = 0;
  // GETs are held; a page shows one pet per write so far, plus one. POSTs are answered at once.
  upstream.behave((request, response, { after }) => {
    if (request.method === 'POST') {
      writes++;
      return answer(response, 201, petJson(100 + writes));
    }
    const pets = writes + 1;
    hold(response, () => page(response, after, pets, undefined));
  });
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

async function metric(series: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', gateway.gateway.url))).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Polls until `condition` holds; a loaded machine gets ten seconds. */
async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const cost = (response: GqlResponse) => response.body.extensions?.cost as Record<string, number>;
const gets = () => upstream.requests.filter((request) => request.method === 'GET');

describe('identical queries in flight for one key', () => {
  it('are answered by one execution: one upstream request, the same data, the cost where it was spent', async () => {
    const sharedBefore = await metric('graphql_shared_operations_total');
    const executedBefore = await metric('graphql_operations_total{type="query",outcome="ok"}');
    const answers = Array.from({ length: 5 }, () => gateway.query(QUERY));
    await until(async () => (await metric('graphql_shared_operations_total')) - sharedBefore === 4);
    release();
    const responses = await Promise.all(answers);
    expect(gets()).toHaveLength(1);
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ pets: { nodes: [{ id: '1', name: 'Pet 1' }] } });
    }
    // One sent the request; the four that joined it sent nothing, and say so.
    expect(responses.map((response) => cost(response).actualUpstreamRequests).sort()).toEqual([0, 0, 0, 0, 1]);
    expect(responses.every((response) => cost(response).estimatedUpstreamRequests === 1)).toBe(true);
    expect((await metric('graphql_operations_total{type="query",outcome="ok"}')) - executedBefore).toBe(1);
  });

  it('keep going for the others when the client that started them leaves, and stop when all have', async () => {
    const sharedBefore = await metric('graphql_shared_operations_total');
    const clients = [new AbortController(), new AbortController(), new AbortController()];
    const send = (client: AbortController) =>
      fetch(gateway.gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: QUERY }),
        signal: client.signal,
      });
    const first = send(clients[0] as AbortController).catch(() => undefined);
    await until(() => upstream.inFlight === 1);
    const second = send(clients[1] as AbortController).catch(() => undefined);
    const third = send(clients[2] as AbortController);
    await until(async () => (await metric('graphql_shared_operations_total')) - sharedBefore === 2);
    clients[0]?.abort();
    clients[1]?.abort();
    await Promise.all([first, second]);
    // Two of three gone: the upstream request is still open for the third.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(upstream.inFlight).toBe(1);
    release();
    const answered = await third;
    expect(((await answered.json()) as GqlResponse['body']).data).toEqual({
      pets: { nodes: [{ id: '1', name: 'Pet 1' }] },
    });
    expect(gets()).toHaveLength(1);

    // All gone: the execution is cancelled, and its upstream request with it.
    upstream.reset();
    const last = [new AbortController(), new AbortController()];
    const leaving = last.map((client) => send(client).catch(() => undefined));
    await until(() => upstream.inFlight === 1);
    await until(async () => (await metric('graphql_shared_operations_total')) - sharedBefore === 3);
    for (const client of last) client.abort();
    await Promise.all(leaving);
    await until(() => upstream.inFlight === 0);
    expect(gets()).toHaveLength(1);
  });
});

describe('what is never shared', () => {
  it('a query of another key', async () => {
    const sharedBefore = await metric('graphql_shared_operations_total');
    const answers = [gateway.query(QUERY), gateway.query(QUERY, { key: OTHER_KEY })];
    // Both requests upstream at once, each with its own key.
    await until(() => gets().length === 2);
    release();
    await Promise.all(answers);
    expect(
      gets()
        .map((request) => request.authorization)
        .sort(),
    ).toEqual([`Bearer ${OTHER_KEY}`, `Bearer ${UPSTREAM_KEY}`].sort());
    expect(await metric('graphql_shared_operations_total')).toBe(sharedBefore);
  });

  it('a query asking for another media type: each gets its own negotiated answer', async () => {
    const sharedBefore = await metric('graphql_shared_operations_total');
    const coalescedBefore = await metric('petstore_coalesced_requests_total');
    const answers = [
      gateway.query(QUERY, { headers: { accept: 'application/graphql-response+json' } }),
      gateway.query(QUERY, { headers: { accept: 'application/json' } }),
    ];
    // Two executions: the second joins the first one's upstream GET, not its execution.
    await until(async () => (await metric('petstore_coalesced_requests_total')) - coalescedBefore === 1);
    release();
    const [graphqlResponse, json] = await Promise.all(answers);
    expect(graphqlResponse?.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    expect(json?.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await metric('graphql_shared_operations_total')).toBe(sharedBefore);
  });

  it('a mutation: three identical createPet in flight create three pets', async () => {
    upstream.behave((request, response) => {
      if (request.method !== 'POST') return answer(response, 500, '{}');
      writes++;
      const id = 100 + writes;
      hold(response, () => answer(response, 201, petJson(id)));
    });
    const answers = Array.from({ length: 3 }, () => gateway.query(CREATE));
    await until(() => upstream.requests.length === 3);
    release();
    const ids = (await Promise.all(answers)).map((response) => response.body.data?.createPet);
    expect(new Set(ids.map((created) => (created as { pet: { id: string } }).pet.id)).size).toBe(3);
  });

  it('an execution that started before a write of the key ended, to a query after it', async () => {
    const before = gateway.query(QUERY);
    await until(() => gets().length === 1);
    const created = await gateway.query(CREATE);
    expect(created.body.errors).toBeUndefined();
    // The same query after the write: its own execution, its own upstream request, the new pet in it.
    const after = gateway.query(QUERY);
    await until(() => gets().length === 2);
    release();
    const [earlier, later] = await Promise.all([before, after]);
    expect(earlier.body.data).toEqual({ pets: { nodes: [{ id: '1', name: 'Pet 1' }] } });
    expect(later.body.data).toEqual({
      pets: {
        nodes: [
          { id: '1', name: 'Pet 1' },
          { id: '2', name: 'Pet 2' },
        ],
      },
    });
    expect(cost(later).actualUpstreamRequests).toBe(1);
  });
});
