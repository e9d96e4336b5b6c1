/**
 * OpenTelemetry tracing, end to end: a real reference store, a gateway given a tracer whose spans
 * stay in memory (the SDK's InMemorySpanExporter), and clients that send W3C `traceparent`. Each
 * GraphQL request is a SERVER span under the client's, each upstream request a CLIENT span under
 * it, and the store's request log shows the `traceparent` that reached it. Without a tracer the
 * gateway sends none.
 */

import { createHash } from 'node:crypto';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Pet } from '../../../src/petstore/store.js';
import { errorCodes } from '../../helpers/gql.js';
import { type Stack, type StackOptions, startStack, TEST_KEY } from '../../helpers/start-stack.js';
import { clientSpan, type MemoryTracer, memoryTracer, parseTraceparent } from '../../helpers/tracing.js';

const OTHER_KEY = 'other-client-key-0123456789';
const SEED: Pet[] = [1n, 2n, 3n].map((id) => ({ id, name: `Pet ${id}`, categoryId: 1n, status: 'available' }));
const PETS = 'query Pets { pets(first: 2) { nodes { id name } } }';

let memory: MemoryTracer;
const stacks: Stack[] = [];

beforeAll(() => {
  memory = memoryTracer();
});
afterAll(() => memory.close());
beforeEach(() => memory.reset());
afterEach(async () => {
  await Promise.all(stacks.splice(0).map((stack) => stack.close()));
});

async function start(options: StackOptions = {}, traced = true): Promise<Stack> {
  const stack = await startStack({
    ...options,
    store: { keys: { [TEST_KEY]: 'enterprise', [OTHER_KEY]: 'enterprise' }, seed: SEED, ...options.store },
    gateway: traced ? { tracer: memory.tracer } : {},
  });
  stacks.push(stack);
  return stack;
}

/** Polls until `condition` holds; a loaded machine gets ten seconds. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const servers = () => memory.spans().filter((span) => span.kind === SpanKind.SERVER);
const clients = () => memory.spans().filter((span) => span.kind === SpanKind.CLIENT);
const childrenOf = (parent: ReadableSpan) =>
  memory.spans().filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId);

describe('a traced GraphQL request', () => {
  it('is a span under the client traceparent, with its upstream request as a child that the store sees as parent', async () => {
    const stack = await start();
    const client = clientSpan();
    const response = await stack.query(PETS, { headers: { traceparent: client.traceparent } });
    expect(response.status).toBe(200);
    await until(() => servers().length === 1);

    const [operation] = servers() as [ReadableSpan];
    expect(operation.name).toBe('query Pets');
    expect(operation.spanContext().traceId).toBe(client.traceId);
    expect(operation.parentSpanContext?.spanId).toBe(client.spanId);
    expect(operation.status.code).toBe(SpanStatusCode.UNSET);
    expect(operation.attributes).toMatchObject({
      'graphql.operation.type': 'query',
      'graphql.operation.name': 'Pets',
      'graphql.document.hash': createHash('sha256').update(PETS).digest('hex'),
      'http.response.status_code': 200,
      'petstore.cost.estimated_upstream_requests': 1,
      'petstore.cost.actual_upstream_requests': 1,
      'petstore.request_id': response.headers.get('x-request-id'),
    });

    const [upstream] = childrenOf(operation) as [ReadableSpan];
    expect(childrenOf(operation)).toHaveLength(1);
    expect(upstream.kind).toBe(SpanKind.CLIENT);
    expect(upstream.name).toBe('GET /v1/pets');
    expect(upstream.spanContext().traceId).toBe(client.traceId);
    expect(upstream.status.code).toBe(SpanStatusCode.UNSET);
    expect(upstream.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.template': '/v1/pets',
      'petstore.route': 'listPets',
      'http.response.status_code': 200,
      'petstore.attempts': 1,
      'server.address': '127.0.0.1',
    });
    expect(upstream.attributes['petstore.budget_wait_ms']).toBeGreaterThanOrEqual(0);

    // The store received the upstream span as the parent of its work, in the client's trace.
    expect(stack.requests).toHaveLength(1);
    expect(parseTraceparent(stack.requests[0]?.traceparent)).toEqual({
      traceId: client.traceId,
      parentId: upstream.spanContext().spanId,
    });
  });

  it('starts a trace of its own when the client sends no traceparent (or a malformed one)', async () => {
    const stack = await start();
    await stack.query(PETS);
    await stack.query(PETS, { headers: { traceparent: '00-not-a-trace-01' } });
    await until(() => servers().length === 2);
    for (const operation of servers()) {
      expect(operation.parentSpanContext).toBeUndefined();
      const [upstream] = childrenOf(operation) as [ReadableSpan];
      expect(upstream.spanContext().traceId).toBe(operation.spanContext().traceId);
    }
    const sent = stack.requests.map((record) => parseTraceparent(record.traceparent)?.traceId);
    expect(sent).toEqual(servers().map((operation) => operation.spanContext().traceId));
  });

  it('names the deprecated lookup by its route template, never by the id', async () => {
    const stack = await start({ env: { PET_LOOKUP: 'legacy' } });
    const response = await stack.query('{ pet(id: "2") { id } }');
    expect(response.body.data).toEqual({ pet: { id: '2' } });
    await until(() => clients().length === 1);
    const [upstream] = clients() as [ReadableSpan];
    expect(upstream.name).toBe('GET /v1/pets/{petId}');
    expect(upstream.attributes).toMatchObject({ 'url.template': '/v1/pets/{petId}', 'petstore.route': 'getPet' });
    expect(servers()[0]?.name).toBe('query');
  });

  it('records the first error code as the span status, whether Apollo Server ran or refused the request', async () => {
    const stack = await start();
    expect(errorCodes(await stack.query('{ pets(first: 0) { nodes { id } } }'))).toEqual(['BAD_USER_INPUT']);
    const refused = await stack.query(PETS, { headers: { authorization: 'Basic abc' } });
    expect(refused.status).toBe(401);
    await until(() => servers().length === 2);
    const [invalid, unauthenticated] = servers() as [ReadableSpan, ReadableSpan];
    expect(invalid.status).toEqual({ code: SpanStatusCode.ERROR, message: 'BAD_USER_INPUT' });
    expect(invalid.attributes['error.type']).toBe('BAD_USER_INPUT');
    expect(unauthenticated.status).toEqual({ code: SpanStatusCode.ERROR, message: 'UNAUTHENTICATED' });
    expect(unauthenticated.attributes['http.response.status_code']).toBe(401);
    expect(clients()).toEqual([]);
  });

  it('shows a 429 from the store as a pause event on the upstream span, with the attempts it took', async () => {
    const stack = await start({
      store: { keys: { [TEST_KEY]: { perMinute: 1, perDay: 100_000 } }, minuteMs: 1_000 },
      env: { PETSTORE_MAX_WAIT: '10s' },
    });
    // Spend the store's one-second window directly, early in it, so the gateway's request meets a 429.
    const into = Date.now() % 1_000;
    if (into > 250) await new Promise((resolve) => setTimeout(resolve, 1_000 - into + 5));
    await (await fetch(`${stack.store.url}/pets`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).text();

    const response = await stack.query(PETS);
    expect(errorCodes(response)).toEqual([]);
    await until(() => clients().length === 1);
    const [upstream] = clients() as [ReadableSpan];
    const statuses = stack.requests.slice(1).map((record) => record.status);
    expect(statuses).toEqual([429, 200]);
    expect(upstream.attributes).toMatchObject({
      'http.response.status_code': 200,
      'petstore.attempts': 2,
      'http.request.resend_count': 1,
    });
    const pauses = upstream.events.filter((event) => event.name === '429 pause');
    expect(pauses).toHaveLength(1);
    const pauseMs = pauses[0]?.attributes?.['petstore.pause_ms'] as number;
    expect(pauseMs).toBeGreaterThan(0);
    expect(pauseMs).toBeLessThanOrEqual(1_000);
    // The wait for the pause to end is time waiting for budget.
    expect(upstream.attributes['petstore.budget_wait_ms']).toBeGreaterThan(0);
    // Both attempts carried the same span as their parent.
    const sent = stack.requests.slice(1).map((record) => parseTraceparent(record.traceparent)?.parentId);
    expect(sent).toEqual([upstream.spanContext().spanId, upstream.spanContext().spanId]);
  });

  it('never puts an API key in a span: not the server key, not a client key', async () => {
    const stack = await start();
    await stack.query(PETS);
    await stack.query(PETS, { key: OTHER_KEY });
    await stack.query('mutation { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }', {
      key: OTHER_KEY,
    });
    await stack.query(PETS, { key: 'unknown-key-0123456789' });
    await until(() => servers().length === 4);
    expect(clients().map((span) => span.name)).toEqual([
      'GET /v1/pets',
      'GET /v1/pets',
      'POST /v1/pets',
      'GET /v1/pets',
    ]);
    const exported = JSON.stringify(
      memory.spans().map(({ name, attributes, events, links, status, resource }) => ({
        name,
        attributes,
        events,
        links,
        status,
        resource: resource.attributes,
      })),
    );
    for (const key of [TEST_KEY, OTHER_KEY, 'unknown-key-0123456789']) expect(exported).not.toContain(key);
    expect(exported).not.toMatch(/limit=|https?:\/\//);
  });
});

describe('without a tracer', () => {
  it('sends no traceparent upstream, even when the client sent one', async () => {
    const stack = await start({}, false);
    await stack.query(PETS, { headers: { traceparent: clientSpan().traceparent } });
    expect(stack.requests.map((record) => record.traceparent)).toEqual([undefined]);
    expect(memory.spans()).toEqual([]);
  });
});

describe('shared work', () => {
  it('gives a request answered by an identical one in flight its own span, in its own trace, linked to the one that executed', async () => {
    const stack = await start({ store: { responseDelayMs: 1_000 } });
    const [first, second] = [clientSpan(), clientSpan()];
    const leading = stack.query(PETS, { headers: { traceparent: first.traceparent } });
    // The first request's upstream request is out (and held a second by the store): the second joins it.
    await until(() => memory.started.includes('GET /v1/pets'));
    const joining = stack.query(PETS, { headers: { traceparent: second.traceparent } });
    const answers = await Promise.all([leading, joining]);
    expect(answers.map((answer) => answer.body.data)).toEqual([answers[0]?.body.data, answers[0]?.body.data]);
    await until(() => servers().length === 2);

    const leader = servers().find((span) => span.spanContext().traceId === first.traceId) as ReadableSpan;
    const follower = servers().find((span) => span.spanContext().traceId === second.traceId) as ReadableSpan;
    expect(leader.parentSpanContext?.spanId).toBe(first.spanId);
    expect(follower.parentSpanContext?.spanId).toBe(second.spanId);
    expect(leader.attributes['petstore.shared_execution']).toBeUndefined();
    expect(follower.name).toBe('query Pets');
    expect(follower.attributes).toMatchObject({
      'petstore.shared_execution': true,
      'graphql.operation.type': 'query',
      'graphql.operation.name': 'Pets',
      'petstore.cost.estimated_upstream_requests': 1,
      'petstore.cost.actual_upstream_requests': 0,
      'http.response.status_code': 200,
    });
    expect(follower.links.map((link) => link.context.spanId)).toEqual([leader.spanContext().spanId]);
    expect(follower.links[0]?.context.traceId).toBe(first.traceId);
    // One upstream request, under the request that sent it.
    expect(childrenOf(leader).map((span) => span.name)).toEqual(['GET /v1/pets']);
    expect(childrenOf(follower)).toEqual([]);
    expect(stack.requests.map((record) => parseTraceparent(record.traceparent)?.traceId)).toEqual([first.traceId]);
  });

  it('gives a GET joined by another operation one upstream span, and the joining operation an event', async () => {
    const stack = await start({ store: { responseDelayMs: 1_000 } });
    const sending = stack.query('query A { pets(first: 2) { nodes { id } } }');
    await until(() => memory.started.includes('GET /v1/pets'));
    const joining = stack.query('query B { pets(first: 2) { nodes { id name } } }');
    await Promise.all([sending, joining]);
    await until(() => servers().length === 2);
    const a = servers().find((span) => span.name === 'query A') as ReadableSpan;
    const b = servers().find((span) => span.name === 'query B') as ReadableSpan;
    expect(childrenOf(a).map((span) => span.name)).toEqual(['GET /v1/pets']);
    expect(childrenOf(b)).toEqual([]);
    expect(b.events.map((event) => [event.name, event.attributes])).toEqual([
      ['joined in-flight request', { 'petstore.route': 'listPets' }],
    ]);
    expect(b.attributes['petstore.cost.actual_upstream_requests']).toBe(0);
    expect(stack.requests).toHaveLength(1);
  });
});
