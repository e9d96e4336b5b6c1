/**
 * Which requests may share an execution (src/gateway/edge/shared-executions.ts), and how a request that
 * joined one gets its answer. The end-to-end behaviour is in test/integration/gateway/shared-executions.test.ts.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type HTTPGraphQLResponse } from '@apollo/server';
import { describe, expect, it } from 'vitest';
import { createSharedExecutions } from '../../../../src/gateway/edge/shared-executions.js';
import type { CancelSignal } from '../../../../src/gateway/shared/cancel.js';

const executions = createSharedExecutions({
  keyIdOf: (headers) => (headers.authorization === 'Bearer bad key' ? undefined : (headers.authorization ?? 'server')),
});
const JSON_HEADERS: IncomingHttpHeaders = { 'content-type': 'application/json', accept: 'application/json' };
const keyOf = (body: unknown, headers: IncomingHttpHeaders = JSON_HEADERS) =>
  executions.keyOf(headers, JSON.stringify(body), body);

describe('keyOf', () => {
  it('names a query by key, body and the headers Apollo Server reads', () => {
    const body = { query: '{ pets(first: 1) { nodes { id } } }' };
    expect(keyOf(body)).toBeDefined();
    expect(keyOf(body)).toEqual(keyOf(body));
    expect(keyOf(body, { ...JSON_HEADERS, authorization: 'Bearer k' })?.name).not.toBe(keyOf(body)?.name);
    expect(keyOf(body, { ...JSON_HEADERS, accept: 'application/graphql-response+json' })?.name).not.toBe(
      keyOf(body)?.name,
    );
    expect(keyOf(body, { ...JSON_HEADERS, 'apollo-require-preflight': 'true' })?.name).not.toBe(keyOf(body)?.name);
    expect(keyOf({ ...body, variables: { a: 1 } })?.name).not.toBe(keyOf(body)?.name);
  });

  it('shares no mutation, whichever operation of a document is chosen', () => {
    const document =
      'query Read { pets(first: 1) { nodes { id } } } mutation Write { createPet(input: {name: "a", categoryId: "1"}) { pet { id } } }';
    expect(keyOf({ query: document, operationName: 'Read' })).toBeDefined();
    expect(keyOf({ query: document, operationName: 'Write' })).toBeUndefined();
    // Two operations and no name: Apollo refuses it; nothing to share.
    expect(keyOf({ query: document })).toBeUndefined();
    expect(
      keyOf({ query: 'mutation { createPet(input: {name: "a", categoryId: "1"}) { pet { id } } }' }),
    ).toBeUndefined();
    expect(keyOf({ query: 'subscription { pets }' })).toBeUndefined();
  });

  it('never takes what it learnt of a named operation for an unnamed document, or the reverse', () => {
    const query = '{ pets(first: 1) { nodes { id } } }';
    // Named "query", this document has no such operation; unnamed, "query\n" + it is a plain query.
    expect(keyOf({ query, operationName: 'query' })).toBeUndefined();
    expect(keyOf({ query: `query\n${query}` })).toBeDefined();
    expect(keyOf({ query, operationName: 'query' })).toBeUndefined();
  });

  it('shares nothing it cannot read or should not hold', () => {
    expect(keyOf({ query: '{ pets(' })).toBeUndefined();
    expect(keyOf([{ query: '{ a }' }, { query: '{ a }' }])).toBeUndefined();
    expect(keyOf({ extensions: { persistedQuery: { version: 1, sha256Hash: 'x' } } })).toBeUndefined();
    expect(keyOf({ query: `{ pets(first: 1) { nodes { id } } } # ${'x'.repeat(20_000)}` })).toBeUndefined();
    expect(
      keyOf({ query: '{ a }' }, { ...JSON_HEADERS, accept: 'multipart/mixed; deferSpec=20220824' }),
    ).toBeUndefined();
    expect(keyOf({ query: '{ a }' }, { ...JSON_HEADERS, authorization: 'Bearer bad key' })).toBeUndefined();
  });
});

describe('answer', () => {
  const response = (body: string): HTTPGraphQLResponse => ({
    status: 200,
    headers: new HeaderMap([['content-type', 'application/json; charset=utf-8']]),
    body: { kind: 'complete', string: body },
  });
  const never = () => {};

  it('runs once for requests in flight together, and tells those who joined that they sent nothing', async () => {
    const key = keyOf({ query: '{ joined }' });
    if (key === undefined) throw new Error('not shareable');
    let runs = 0;
    let finish: (value: HTTPGraphQLResponse) => void = () => {};
    const execute = () => {
      runs++;
      return new Promise<HTTPGraphQLResponse>((resolve) => {
        finish = resolve;
      });
    };
    const first = executions.answer(key, never, execute);
    const second = executions.answer(key, never, execute);
    finish(
      response('{"data":{"a":1},"extensions":{"cost":{"estimatedUpstreamRequests":1,"actualUpstreamRequests":1}}}\n'),
    );
    const [own, joined] = await Promise.all([first, second]);
    expect(runs).toBe(1);
    expect(own.body).toEqual({ kind: 'complete', string: expect.stringContaining('"actualUpstreamRequests":1') });
    expect(JSON.parse((joined.body as { string: string }).string)).toEqual({
      data: { a: 1 },
      extensions: { cost: { estimatedUpstreamRequests: 1, actualUpstreamRequests: 0 } },
    });
    // After the answer nothing is shared: the next request runs again.
    const third = executions.answer(key, never, execute);
    finish(response('{"data":{"a":2}}\n'));
    expect(((await third).body as { string: string }).string).toBe('{"data":{"a":2}}\n');
    expect(runs).toBe(2);
  });

  it.each([
    [
      'as Apollo Server writes it',
      '{"data":{"a":1},"extensions":{"cost":{"estimatedUpstreamRequests":1,"actualUpstreamRequests":12}}}\n',
    ],
    [
      'with an alias of the same name in the data',
      '{"data":{"actualUpstreamRequests":7},"extensions":{"cost":{"estimatedUpstreamRequests":1,"actualUpstreamRequests":12}}}\n',
    ],
    [
      'with no cost, an alias of that name last in the data (left as it is)',
      '{"data":{"b":{"actualUpstreamRequests":7}}}\n',
    ],
    [
      'with a stale note after the cost',
      '{"data":{"a":1},"extensions":{"cost":{"actualUpstreamRequests":12},"stale":[{"path":["a"],"ageSeconds":1}]}}\n',
    ],
    ['in another order', '{"extensions":{"cost":{"actualUpstreamRequests":12}},"data":{"actualUpstreamRequests":7}}'],
  ])(
    'tells a request that joined an answer %s that it sent nothing, and changes nothing else',
    async (_label, body) => {
      const key = keyOf({ query: `{ joined${body.length} }` });
      if (key === undefined) throw new Error('not shareable');
      let finish: (response: HTTPGraphQLResponse) => void = () => {};
      const execute = () => new Promise<HTTPGraphQLResponse>((resolve) => (finish = resolve));
      const first = executions.answer(key, never, execute);
      const second = executions.answer(key, never, execute);
      finish(response(body));
      const [own, joined] = await Promise.all([first, second]);
      expect(own.body).toEqual({ kind: 'complete', string: body });
      const expected = JSON.parse(body);
      if (expected.extensions !== undefined) expected.extensions.cost.actualUpstreamRequests = 0;
      expect(JSON.parse((joined.body as { string: string }).string)).toEqual(expected);
    },
  );

  it('does not join an execution every client of which has gone, nor one a write of the key ended', async () => {
    const key = keyOf({ query: '{ gone }' });
    if (key === undefined) throw new Error('not shareable');
    const signals: CancelSignal[] = [];
    const execute = (signal: CancelSignal) => {
      signals.push(signal);
      return new Promise<HTTPGraphQLResponse>(() => {});
    };
    let leave: (reason: unknown) => void = () => {};
    const first = executions.answer(key, (registered) => (leave = registered), execute);
    leave(new Error('gone'));
    await expect(first).rejects.toThrow('gone');
    expect(signals[0]?.aborted).toBe(true);
    void executions.answer(key, never, execute);
    expect(signals).toHaveLength(2);
    executions.invalidate(key.keyId);
    void executions.answer(key, never, execute);
    expect(signals).toHaveLength(3);
    expect(signals[1]?.aborted).toBe(false);
  });
});
