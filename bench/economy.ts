/**
 * `npm run bench:economy`: how many upstream requests the gateway spends, in one run, in process
 * (counts, not speed, so sharing a core does not skew them):
 *
 *   (3) one operation with 100 pet lookups (aliased pet(id:), and 100 `_entities` representations)
 *       on a 1,000-pet catalogue, with PET_LOOKUP=list, legacy and auto;
 *   (4) a read-heavy mix from 40 concurrent clients, GraphQL operations served per upstream request,
 *       with coalescing and the per-key cache off and on;
 *   (5) the same mix through 1 replica and through 3 replicas on one Redis, PETSTORE_CACHE_TTL=1s;
 *   (6) reads at twice the plan for 20 s, with and without PETSTORE_STALE_TTL=60s: the share of
 *       operations answered with data, and upstream 429s;
 *   (7) a heavy client (40 concurrent loops) and a light one (a query a second) sharing the server
 *       key on a 5/1s plan for 20 s: the light client's waits;
 *   (8) 100 lookups right after a list of the whole catalogue, PETSTORE_CACHE_TTL=20s.
 *
 * Rate limits are off in (3) to (5): they measure what reaches the upstream, not pacing.
 */

import { parseConfig } from '../src/config.js';
import { createGateway, type GatewayHandle } from '../src/gateway/server.js';
import type { RequestRecord } from '../src/petstore/app.js';
import { startPetstore } from '../src/petstore/start.js';
import type { Pet } from '../src/petstore/store.js';
import { gql, startRedis } from './lib/client.js';

const KEY = 'bench-key';
const CATALOGUE = 1_000;
const MIX_CLIENTS = 40;
const MIX_SECONDS = Number(process.env.BENCH_MIX_SECONDS ?? 5);

function catalogue(): Pet[] {
  const statuses = ['available', 'pending', 'sold'] as const;
  return Array.from({ length: CATALOGUE }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: BigInt((i % 7) + 1),
    status: statuses[i % 3] as Pet['status'],
  }));
}

interface StackOptions {
  readonly storeDelayMs?: number;
  readonly replicas?: number;
  readonly redisUrl?: string;
  /** The key's limit per store window, and that window (default: none reached). */
  readonly perWindow?: number;
  readonly windowMs?: number;
}

async function stack(env: Record<string, string>, options: StackOptions = {}) {
  const records: RequestRecord[] = [];
  const store = await startPetstore({
    keys: { [KEY]: { perMinute: options.perWindow ?? 1e9, perDay: 1e12 } },
    minuteMs: options.windowMs ?? 60_000,
    seed: catalogue(),
    responseDelayMs: options.storeDelayMs ?? 0,
    onRequest: (record) => records.push(record),
  });
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: store.url,
    PETSTORE_API_KEY: KEY,
    PETSTORE_RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const prefix = `economy-${process.pid}-${Date.now()}`;
  const gateways: GatewayHandle[] = [];
  for (let i = 0; i < (options.replicas ?? 1); i++) {
    gateways.push(await createGateway(config, { host: '127.0.0.1', redisPrefix: prefix }));
  }
  let next = 0;
  return {
    url: (gateways[0] as GatewayHandle).url,
    /** The replicas' URLs in turn, as a load balancer would spread clients. */
    nextUrl: () => (gateways[next++ % gateways.length] as GatewayHandle).url,
    records,
    async close() {
      for (const gateway of gateways) await gateway.close();
      await store.close();
    },
  };
}

/** 100 ids spread over the catalogue, the same for every row. */
const IDS = Array.from({ length: 100 }, (_, i) => String(((i * 7919) % CATALOGUE) + 1));

async function lookups(): Promise<string[]> {
  const rows: string[] = [];
  const aliased = `{ ${IDS.map((id, i) => `p${i}: pet(id: "${id}") { id name }`).join(' ')} }`;
  const entities = `query($r: [_Any!]!) { _entities(representations: $r) { ... on Pet { id name } } }`;
  const representations = IDS.map((id) => ({ __typename: 'Pet', id }));
  for (const lookup of ['list', 'legacy', 'auto']) {
    for (const [shape, run] of [
      ['100 aliased pet(id:)', (url: string) => gql(url, aliased)],
      ['100 _entities representations', (url: string) => gql(url, entities, { variables: { r: representations } })],
    ] as const) {
      const target = await stack({ PET_LOOKUP: lookup, MAX_TOKENS: '5000' });
      const response = await run(target.url);
      if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
      const count = (operation: string) => target.records.filter((r) => r.operation === operation).length;
      rows.push(`| ${shape} | ${lookup} | ${count('listPets')} | ${count('getPet')} | ${target.records.length} |`);
      await target.close();
    }
  }
  return rows;
}

/** A read-heavy mix: mostly lists of a few shapes, some lookups of popular pets, a few creates. */
function operation(n: number): string {
  const roll = n % 20;
  if (roll === 0) return `mutation { createPet(input: { name: "New ${n}", categoryId: "1" }) { pet { id } } }`;
  if (roll < 4) return `{ pet(id: "${(n % 10) + 1}") { id name status } }`;
  const status = ['', '(status: AVAILABLE)', '(status: SOLD)'][n % 3];
  return `{ pets${status ? status.replace(')', ', first: 20)') : '(first: 20)'} { nodes { id name } } }`;
}

async function mix(label: string, env: Record<string, string>, options: StackOptions = {}): Promise<string> {
  const ratio = await mixRatio(env, options);
  return `| ${label} | ${ratio.served} | ${ratio.upstream} | ${(ratio.served / ratio.upstream).toFixed(2)} |`;
}

async function mixRatio(env: Record<string, string>, options: StackOptions = {}) {
  // A store 5 ms away, as a real upstream is, so requests overlap as they would in production.
  const target = await stack(env, { storeDelayMs: 5, ...options });
  const deadline = Date.now() + MIX_SECONDS * 1000;
  let served = 0;
  let counter = 0;
  await Promise.all(
    Array.from({ length: MIX_CLIENTS }, async () => {
      while (Date.now() < deadline) {
        const response = await gql(target.nextUrl(), operation(counter++));
        if (!response.body.errors) served++;
      }
    }),
  );
  const upstream = target.records.length;
  await target.close();
  return { served, upstream };
}

/** (6) Reads only (a write cannot be answered stale) at twice the plan's rate, paced, each its own request. */
async function overload(label: string, env: Record<string, string>): Promise<string> {
  const perSecond = 20;
  const target = await stack(
    { PETSTORE_RATE_LIMITS: `${perSecond}/1s`, PETSTORE_MAX_WAIT: '500ms', ...env },
    { storeDelayMs: 5, perWindow: perSecond, windowMs: 1_000 },
  );
  const seconds = Number(process.env.BENCH_OVERLOAD_SECONDS ?? 20);
  const offered = 2 * perSecond * seconds;
  const started = Date.now();
  const outcomes: Promise<{ data: boolean; stale: boolean }>[] = [];
  for (let i = 0; i < offered; i++) {
    await sleep(started + (i * 1_000) / (2 * perSecond) - Date.now());
    // Reads only, sixty shapes in turn: each is its own upstream request, asked again every 1.5 s.
    const query = `{ pets(first: ${(i % 60) + 1}) { nodes { id name } } }`;
    outcomes.push(
      gql(target.url, query).then((response) => ({
        data: response.body.errors === undefined,
        stale: response.body.extensions?.stale !== undefined,
      })),
    );
  }
  const results = await Promise.all(outcomes);
  const with429 = target.records.filter((record) => record.status === 429).length;
  await target.close();
  const data = results.filter((result) => result.data).length;
  const stale = results.filter((result) => result.stale).length;
  return `| ${label} | ${offered} | ${((data / offered) * 100).toFixed(1)}% | ${stale} | ${with429} |`;
}

/** (7) A heavy and a light client of the server key on a 5/1s plan. */
async function fairness(): Promise<string> {
  const target = await stack(
    { PETSTORE_RATE_LIMITS: '5/1s', PETSTORE_MAX_WAIT: '30s', CLIENT_ID_HEADER: 'x-client-id' },
    { storeDelayMs: 5, perWindow: 5, windowMs: 1_000 },
  );
  const seconds = Number(process.env.BENCH_FAIRNESS_SECONDS ?? 20);
  const deadline = Date.now() + seconds * 1_000;
  let heavyServed = 0;
  let n = 0;
  const heavy = Array.from({ length: 40 }, async () => {
    while (Date.now() < deadline) {
      const response = await gql(target.url, `{ pets(first: ${(n++ % 100) + 1}) { nodes { id } } }`, {
        headers: { 'x-client-id': 'heavy' },
      });
      if (!response.body.errors) heavyServed++;
    }
  });
  const waits: number[] = [];
  let lightServed = 0;
  for (let i = 0; Date.now() < deadline; i++) {
    const started = performance.now();
    const response = await gql(target.url, `{ pets(first: ${(i % 50) + 1}, status: SOLD) { nodes { id } } }`, {
      headers: { 'x-client-id': 'light' },
    });
    waits.push(performance.now() - started);
    if (!response.body.errors) lightServed++;
    await sleep(1_000 - (performance.now() - started));
  }
  await Promise.all(heavy);
  const with429 = target.records.filter((record) => record.status === 429).length;
  await target.close();
  waits.sort((a, b) => a - b);
  const p95 = waits[Math.min(waits.length - 1, Math.floor(waits.length * 0.95))] ?? 0;
  return `| ${waits.length} | ${((lightServed / waits.length) * 100).toFixed(0)}% | ${(p95 / 1000).toFixed(2)} s | ${heavyServed} | ${with429} |`;
}

/** (8) The whole catalogue listed, then 100 lookups: what they cost. */
async function learnedLookups(): Promise<string> {
  const target = await stack({ PETSTORE_CACHE_TTL: '20s' });
  for (let after: string | null = null, more = true; more; ) {
    const response = await gql(
      target.url,
      'query ($after: String) { pets(first: 100, after: $after) { pageInfo { hasNextPage endCursor } } }',
      { variables: { after } },
    );
    more = response.body.data?.pets.pageInfo.hasNextPage ?? false;
    after = response.body.data?.pets.pageInfo.endCursor ?? null;
  }
  const listed = target.records.length;
  const response = await gql(target.url, `{ ${IDS.map((id, i) => `p${i}: pet(id: "${id}") { id name }`).join(' ')} }`);
  if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
  const looked = target.records.length - listed;
  await target.close();
  return `| ${listed} | 100 | ${looked} |`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

console.log(`(3) Upstream requests for 100 pet lookups in one operation, catalogue of ${CATALOGUE} pets:\n`);
console.log('| operation | PET_LOOKUP | list requests | deprecated getPet | upstream total |');
console.log('|---|---|---:|---:|---:|');
for (const row of await lookups()) console.log(row);

console.log(
  `\n(4) Read-heavy mix (80% lists of 3 shapes, 15% lookups of 10 popular pets, 5% creates; ${MIX_CLIENTS} clients, ${MIX_SECONDS} s, store 5 ms away):\n`,
);
console.log('| setting | operations served | upstream requests | operations per upstream request |');
console.log('|---|---:|---:|---:|');
console.log(await mix('coalescing off, cache off', { PETSTORE_COALESCE: 'false' }));
console.log(await mix('coalescing on, cache off (default)', {}));
console.log(await mix('coalescing on, PETSTORE_CACHE_TTL=1s', { PETSTORE_CACHE_TTL: '1s' }));

const redis = await startRedis();
try {
  const one = await mixRatio({ PETSTORE_CACHE_TTL: '1s' });
  const three = await mixRatio(
    { PETSTORE_CACHE_TTL: '1s', REDIS_URL: redis.url },
    { replicas: 3, redisUrl: redis.url },
  );
  const ratio = (r: { served: number; upstream: number }) => r.served / r.upstream;
  console.log(
    `\n(5) The same mix through replicas, PETSTORE_CACHE_TTL=1s (with Redis the replicas share answers; clients spread round-robin):\n`,
  );
  console.log('| replicas | operations served | upstream requests | operations per upstream request |');
  console.log('|---|---:|---:|---:|');
  console.log(`| 1 | ${one.served} | ${one.upstream} | ${ratio(one).toFixed(2)} |`);
  console.log(`| 3 on one Redis | ${three.served} | ${three.upstream} | ${ratio(three).toFixed(2)} |`);
  console.log(`\n3 replicas / 1 replica: ${(ratio(three) / ratio(one)).toFixed(2)}×`);
} finally {
  await redis.stop();
}

console.log('\n(6) Reads (lists of 60 sizes in turn) at twice a 20/1s plan for 20 s, PETSTORE_MAX_WAIT=500ms:\n');
console.log('| setting | operations offered | answered with data | of which stale | upstream 429s |');
console.log('|---|---:|---:|---:|---:|');
console.log(await overload('no stale answers (default)', {}));
console.log(await overload('PETSTORE_STALE_TTL=60s', { PETSTORE_STALE_TTL: '60s' }));

console.log(
  '\n(7) One client firing 40 concurrent loops and one sending a query a second, sharing the server key, 5/1s plan:\n',
);
console.log("| light client's queries | served | p95 wait | heavy client's served | upstream 429s |");
console.log('|---:|---:|---:|---:|---:|');
console.log(await fairness());

console.log('\n(8) 100 lookups right after a list of the whole catalogue, PETSTORE_CACHE_TTL=20s:\n');
console.log('| list requests | lookups | upstream requests for the lookups |');
console.log('|---:|---:|---:|');
console.log(await learnedLookups());
