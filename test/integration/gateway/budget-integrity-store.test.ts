/**
 * The operation budget and the ban guard against the reference store, as a client would meet them:
 * a key whose window was spent elsewhere and then answered once without rate-limit headers; a
 * catalogue of 3,000 pets on the free plan; fifteen aliases continuing from a cursor of one pet.
 * Each runs without and with PETSTORE_CACHE_TTL.
 */

import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createGateway, type GatewayHandle } from '../../../src/gateway/server.js';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import { errorCodes, gql } from '../../helpers/gql.js';
import { sendRaw, startUpstream, type Upstream } from '../../helpers/upstream.js';

const KEY = 'budget-integrity-key';
const FREE = { perMinute: 60, perDay: 1_000 };

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

async function store(options: Parameters<typeof startPetstore>[0]): Promise<[PetstoreHandle, RequestRecord[]]> {
  const records: RequestRecord[] = [];
  const handle = await startPetstore({ ...options, onRequest: (record) => records.push(record) });
  closers.push(() => handle.close());
  return [handle, records];
}

async function gateway(baseUrl: string, env: Record<string, string>): Promise<GatewayHandle> {
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: baseUrl,
    PETSTORE_API_KEY: KEY,
    LOG_LEVEL: 'silent',
    ...env,
  });
  const handle = await createGateway(config, { host: '127.0.0.1' });
  closers.push(() => handle.close());
  return handle;
}

/**
 * A pass-through proxy to `target` whose first answer is a 404 without rate-limit headers, as an
 * upstream (or a gateway in front of it) sends for a route it does not know.
 */
async function headerless404Once(target: PetstoreHandle): Promise<Upstream> {
  let first = true;
  const base = new URL(target.url);
  const proxy = await startUpstream((req: IncomingMessage, res: ServerResponse, body: string) => {
    if (first) {
      first = false;
      return sendRaw(res, 404, '{"code":"not_found","message":"no such route","status":404}');
    }
    const forward = httpRequest(
      { host: base.hostname, port: base.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    forward.end(body);
  });
  closers.push(() => proxy.close());
  return proxy;
}

describe.each(['0s', '20s'])('budget integrity against the reference store (PETSTORE_CACHE_TTL=%s)', (cacheTtl) => {
  it('never gets a key banned whose window was spent elsewhere, after an answer without headers: at most one 429', async () => {
    const [petstore, records] = await store({
      keys: { [KEY]: { perMinute: 20, perDay: 100_000 } },
      minuteMs: 2_000,
      banThreshold: 3,
      seed: Array.from({ length: 30 }, (_, i) => ({
        id: BigInt(i + 1),
        name: `Pet ${i + 1}`,
        categoryId: 1n,
        status: 'available' as const,
      })),
    });
    const proxy = await headerless404Once(petstore);
    const target = await gateway(`${proxy.origin}/v1`, {
      PETSTORE_RATE_LIMITS: '20/2s',
      PETSTORE_MAX_WAIT: '1s',
      PETSTORE_CACHE_TTL: cacheTtl,
    });
    // Another client of the key spends its window directly, early in a window.
    const into = Date.now() % 2_000;
    if (into > 300) await new Promise((resolve) => setTimeout(resolve, 2_000 - into + 5));
    for (let i = 0; i < 20; i++) {
      await (
        await fetch(`${petstore.url}/pets?limit=1`, { headers: { authorization: `Bearer ${KEY}` } })
      ).arrayBuffer();
    }
    // The gateway's first answer has no rate-limit headers: it must not take that as room.
    await gql(target.url, '{ pets(first: 1) { nodes { id } } }');
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => gql(target.url, `{ pets(first: ${i + 2}) { nodes { id } } }`)),
    );
    expect(records.filter((record) => record.code === 'key_banned')).toEqual([]);
    expect(records.filter((record) => record.status === 429).length).toBeLessThanOrEqual(1);
    for (const code of new Set(responses.flatMap(errorCodes))) expect(code).toBe('RATE_LIMITED');
  });

  describe('a catalogue of 3,000 pets on the free plan', () => {
    const seed = Array.from({ length: 3_000 }, (_, i) => ({
      id: BigInt(i + 1),
      name: `Pet ${i + 1}`,
      categoryId: 1n,
      status: 'available' as const,
    }));

    it.each(['auto', 'list'])(
      'PET_LOOKUP=%s: absent ids cost at most 15 requests and say the scan could not finish; present ids still work',
      async (lookup) => {
        const [petstore, records] = await store({ keys: { [KEY]: FREE }, seed });
        const target = await gateway(petstore.url, { PET_LOOKUP: lookup, PETSTORE_CACHE_TTL: cacheTtl });
        // Two ids, so auto scans too (one alone it looks up with getPet while the scan length is unknown).
        const absent = await gql(target.url, '{ a: pet(id: "999999") { id } b: pet(id: "999998") { id } }');
        expect(errorCodes(absent)).toEqual(['UPSTREAM_BUDGET_EXCEEDED', 'UPSTREAM_BUDGET_EXCEEDED']);
        expect(absent.body.data).toEqual({ a: null, b: null });
        expect(records.length).toBeLessThanOrEqual(15);
        const before = records.length;
        const present = await gql(target.url, '{ a: pet(id: "7") { id } b: pet(id: "150") { id } }');
        expect(present.body.errors).toBeUndefined();
        expect(present.body.data).toEqual({ a: { id: '7' }, b: { id: '150' } });
        expect(records.length - before).toBeLessThanOrEqual(2);
        // And later lookups are not refused by an estimate grown from the unfinished scan.
        expect((await gql(target.url, '{ pet(id: "42") { id } }')).body.errors).toBeUndefined();
      },
    );
  });

  it('serves fifteen aliases continuing from a one-pet cursor with one request each, within the share', async () => {
    const [petstore, records] = await store({
      keys: { [KEY]: FREE },
      seed: Array.from({ length: 300 }, (_, i) => ({
        id: BigInt(i + 1),
        name: `Pet ${i + 1}`,
        categoryId: 1n,
        status: 'available' as const,
      })),
    });
    const target = await gateway(petstore.url, { PETSTORE_CACHE_TTL: cacheTtl });
    const first = await gql(target.url, '{ pets(first: 1) { pageInfo { endCursor } } }');
    const cursor = (first.body.data as { pets: { pageInfo: { endCursor: string } } }).pets.pageInfo.endCursor;
    const before = records.length;
    const aliases = Array.from({ length: 15 }, (_, i) => `a${i}: pets(first: 10, after: $c) { nodes { id } }`).join(
      ' ',
    );
    const response = await gql(target.url, `query ($c: String) { ${aliases} }`, { variables: { c: cursor } });
    expect(response.body.errors).toBeUndefined();
    const data = response.body.data as Record<string, { nodes: { id: string }[] }>;
    expect(data.a0?.nodes.map((pet) => pet.id)).toEqual(['2', '3', '4', '5', '6', '7', '8', '9', '10', '11']);
    // Identical pages in flight are shared, so at most one request per alias, and never over the share.
    expect(records.length - before).toBeLessThanOrEqual(15);
  });
});
