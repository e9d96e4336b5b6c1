/**
 * Memory for any number of keys: the gateway (its own process, started with `npm start` as a user
 * would, so its RSS and its V8 heap settings are the product's) is sent 20,000 requests, each with a new random bearer key the reference store refuses.
 * Its RSS stays within 50 MB of where it started, /metrics does not grow with the keys, the
 * store sees at most one request per distinct key and none for a repeat within the refusal
 * memory, and the state held per key is forgotten after PETSTORE_KEY_IDLE_TTL.
 *
 * "Where it started" is after a warm-up of 5,000 keys of the same kind: V8 grows its heap under
 * any load until its collector settles (about 140–150 MB here, keys or no keys), and the bounded
 * memories (refused keys, key digests) fill up. With 4,000 the 20,000 keys then added 21 MB on a
 * 2-core machine with one core busy (10,000 gave 9 MB, and took 25 s longer). What is measured is
 * what 20,000 more keys add: before per-key state was bounded, about 7 KB each (140 MB).
 */

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RequestRecord } from '../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../src/petstore/start.js';
import { gql } from '../helpers/gql.js';
import { descendants, killTree, type Started, startUntil } from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEYS = 20_000;
const CONCURRENCY = 64;

let store: PetstoreHandle;
let gateway: Started;
let url: string;
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
      LOG_LEVEL: 'warn',
    },
    ready: /ready at (\S+)/,
    timeoutMs: 60_000,
  });
  url = gateway.ready[1] as string;
}, 70_000);

afterAll(async () => {
  await killTree(gateway.pid);
  await store.close();
});

/** The RSS of the node process serving (npm and its shell are its parents). */
async function rssMb(): Promise<number> {
  const node = (await descendants(gateway.pid)).at(-1) ?? gateway.pid;
  const status = await readFile(`/proc/${node}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

async function metrics(): Promise<string> {
  return (await fetch(new URL('/metrics', url))).text();
}

/** Sends a query with each key, CONCURRENCY at a time; every answer must be UNAUTHENTICATED. */
async function sendAll(keys: readonly string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++] as string;
      const response = await gql(url, '{ pets(first: 1) { nodes { id } } }', { key });
      expect(response.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const newKeys = (count: number) => Array.from({ length: count }, () => randomBytes(12).toString('base64url'));

it('holds memory and /metrics flat for 20,000 distinct keys, asks the upstream once per key, and forgets them', async () => {
  // Warm up: code paths compiled, the heap grown to its working size, the bounded memories full.
  await sendAll(newKeys(5_000));
  const rssBefore = await rssMb();
  const metricsBefore = (await metrics()).length;

  const keys = newKeys(KEYS);
  const upstreamBefore = records.length;
  await sendAll(keys);
  expect(records.length - upstreamBefore).toBeLessThanOrEqual(KEYS);

  // A repeat within the refusal memory costs the upstream nothing.
  const repeatedFrom = records.length;
  await sendAll(keys.slice(-1_000));
  expect(records.length - repeatedFrom).toBe(0);

  const rssAfter = await rssMb();
  expect(rssAfter - rssBefore).toBeLessThan(50);
  // Counters grow by digits, not by series.
  expect(Math.abs((await metrics()).length - metricsBefore)).toBeLessThan(2_000);
  expect(await metrics()).toMatch(/^petstore_rejected_key_repeats_total 1000$/m);

  // Idle past PETSTORE_KEY_IDLE_TTL, the keys' budget state is forgotten (swept when a key arrives).
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  await sendAll(newKeys(1));
  expect(await metrics()).toMatch(/^petstore_budget_keys 1$/m);
  expect(await rssMb()).toBeLessThan(rssBefore + 50);
}, 240_000);
