/**
 * Memory for any number of keys: the gateway (its own process, started with `npm start` as a user
 * would, so its RSS and its V8 heap settings are the product's) is sent 10,000 requests, each with a
 * new random bearer key the reference store refuses. What those keys add stays under 50 MB, both in
 * the V8 old generation the gateway reports on /metrics and in its RSS; /metrics does not grow with
 * the keys; the store sees at most one request per distinct key and none for a repeat within the
 * refusal memory; and the state held per key is forgotten after PETSTORE_KEY_IDLE_TTL.
 *
 * "Added" is measured from after a warm-up of 10,000 keys of the same kind, so that every bounded
 * memory is full before the measure starts: the key digests' (10,000 entries), and the budgets' and
 * refused keys', held here to PETSTORE_MAX_KEYS = 2,000. With the default of 10,000 and a warm-up
 * of 5,000, as this test had, the measured keys filled the other half of every memory, so bounded
 * state was counted as growth. V8 also grows its heap under any load until it settles, keys or no keys.
 *
 * Why two measures. The old generation (old and large-object spaces, committed) is where state held
 * per key lives: about 40 MB after the warm-up, it moved by -1 to +9 MB across these keys on Node 20
 * and 24. A leak of 7 KB per key (what per-key state cost before it was bounded), added on purpose
 * for the measured keys (20,000 then), made it +156 MB on Node 20 and +166 MB on Node 24. RSS is what an operator
 * sees, and on Node 20 it showed that leak too (+160 MB); but on Node 24, whose young generation is
 * four times Node 20's (128 MB committed under this load), V8 gave young-generation pages back as
 * the leak grew, and RSS rose by only 34 MB in one run and 89 in another. Without a leak, RSS grew
 * by 0–7 MB on Node 20 and 8–29 MB on Node 24 from this warm-up; from the old one it was 27–54 MB on
 * Node 24, which failed CI once.
 */

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RequestRecord } from '../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../src/petstore/start.js';
import { descendants, killTree, type Started, startUntil } from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** 20,000 until the suite outgrew its 5 minutes on 2 cores: a 7 KB leak per key still adds about 78 MB. */
const KEYS = 10_000;
const CONCURRENCY = 64;
const MAX_KEYS = 2_000;
const WARM_UP_KEYS = 10_000;

const METRICS_TOKEN = 'a-metrics-token-for-tests';
let store: PetstoreHandle;
let gateway: Started;
let url: string;
/** 31,000 requests: undici's Pool costs this process a fraction of fetch's CPU, which the gateway shares its cores with. */
let pool: Pool;
let path: string;
const records: RequestRecord[] = [];

beforeAll(async () => {
  store = await startPetstore({ keys: { 'the-one-good-key': 'free' }, onRequest: (record) => records.push(record) });
  gateway = await startUntil('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      PETSTORE_BASE_URL: store.url,
      PETSTORE_KEY_IDLE_TTL: '2s',
      PETSTORE_MAX_KEYS: String(MAX_KEYS),
      LOG_LEVEL: 'warn',
      // The budget gauges (petstore_budget_keys) are on /metrics only behind a token.
      METRICS_TOKEN: METRICS_TOKEN,
    },
    ready: /ready at (\S+)/,
    timeoutMs: 60_000,
  });
  url = gateway.ready[1] as string;
  pool = new Pool(new URL(url).origin, { connections: CONCURRENCY });
  path = new URL(url).pathname;
}, 70_000);

afterAll(async () => {
  await pool?.close();
  // Unset when npm start never became ready (startUntil stopped it then): the store still closes.
  if (gateway !== undefined) await killTree(gateway.pid);
  await store?.close();
});

/** The RSS of the node process serving (npm and its shell are its parents). */
async function rssMb(): Promise<number> {
  const node = (await descendants(gateway.pid)).at(-1) ?? gateway.pid;
  const status = await readFile(`/proc/${node}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

async function metrics(): Promise<string> {
  return (await fetch(new URL('/metrics', url), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
}

/** The V8 old generation's committed size (old and large-object spaces), from prom-client's gauges on /metrics. */
function oldGenerationMb(text: string): number {
  let bytes = 0;
  for (const match of text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(old|large_object)"\} (\d+)$/gm))
    bytes += Number(match[2]);
  expect(bytes).toBeGreaterThan(0);
  return bytes / 1024 / 1024;
}

/** Sends a query with each key, CONCURRENCY at a time; every answer must be UNAUTHENTICATED. */
async function sendAll(keys: readonly string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++] as string;
      const response = await pool.request({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: '{ pets(first: 1) { nodes { id } } }' }),
      });
      const body = (await response.body.json()) as { errors?: { extensions?: { code?: string } }[] };
      expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const newKeys = (count: number) => Array.from({ length: count }, () => randomBytes(12).toString('base64url'));

it('holds memory and /metrics flat for 10,000 distinct keys, asks the upstream once per key, and forgets them', async () => {
  // Warm up: code paths compiled, the heap grown to its working size, the bounded memories full.
  await sendAll(newKeys(WARM_UP_KEYS));
  const rssBefore = await rssMb();
  const metricsBefore = await metrics();

  const keys = newKeys(KEYS);
  const upstreamBefore = records.length;
  await sendAll(keys);
  expect(records.length - upstreamBefore).toBeLessThanOrEqual(KEYS);

  // A repeat within the refusal memory costs the upstream nothing.
  const repeatedFrom = records.length;
  await sendAll(keys.slice(-1_000));
  expect(records.length - repeatedFrom).toBe(0);

  const rssAfter = await rssMb();
  const metricsAfter = await metrics();
  expect(oldGenerationMb(metricsAfter) - oldGenerationMb(metricsBefore)).toBeLessThan(50);
  expect(rssAfter - rssBefore).toBeLessThan(50);
  // Counters grow by digits, not by series.
  expect(Math.abs(metricsAfter.length - metricsBefore.length)).toBeLessThan(2_000);
  expect(metricsAfter).toMatch(/^petstore_rejected_key_repeats_total 1000$/m);

  // Keys the upstream refused keep no budget state at all (and an idle one is swept past
  // PETSTORE_KEY_IDLE_TTL when a key arrives).
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  await sendAll(newKeys(1));
  expect(await metrics()).toMatch(/^petstore_budget_keys 0$/m);
  expect(await rssMb()).toBeLessThan(rssBefore + 50);
}, 240_000);
