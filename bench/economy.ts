/**
 * `npm run bench:economy`: how many upstream requests the gateway spends, in process (counts, not
 * speed, so sharing a core does not skew them):
 *
 *   (3) one operation with 100 pet lookups (aliased pet(id:), and 100 `_entities` representations)
 *       on a 1,000-pet catalogue, with PET_LOOKUP=list, legacy and auto;
 *   (4) a read-heavy mix from 40 concurrent clients: operations served per upstream request, with
 *       coalescing and the per-key cache off and on;
 *   (5) the same mix through 1 replica and through 3 replicas on one Redis, PETSTORE_CACHE_TTL=1s;
 *   (6) reads at twice a plan for 20 s, with and without PETSTORE_STALE_TTL=60s;
 *   (7) a heavy client (40 concurrent loops) and a light one (a query a second) sharing the server
 *       key on a 5/1s plan for 20 s: the light client's waits;
 *   (8) 100 lookups right after a list of the whole catalogue, PETSTORE_CACHE_TTL=20s.
 *
 * Rate limits are off in (3) to (5): they measure what reaches the upstream, not pacing.
 */

import type { Pet } from '../src/petstore/store.js';
import { gql, sleep, stack, startRedis } from './lib/stack.js';
import { table } from './lib/text.js';

const CATALOGUE = 1_000;
const MIX_CLIENTS = 40;
const MIX_SECONDS = Number(process.env.BENCH_MIX_SECONDS ?? 5);
const SECONDS = Number(process.env.BENCH_OVERLOAD_SECONDS ?? 20);
const seed: Pet[] = Array.from({ length: CATALOGUE }, (_, i) => ({
  id: BigInt(i + 1),
  name: `Pet ${i + 1}`,
  categoryId: BigInt((i % 7) + 1),
  status: (['available', 'pending', 'sold'] as const)[i % 3] as Pet['status'],
}));
/** 100 ids spread over the catalogue, and one operation looking them all up. */
const IDS = Array.from({ length: 100 }, (_, i) => String(((i * 7919) % CATALOGUE) + 1));
const ALIASED = `{ ${IDS.map((id, i) => `p${i}: pet(id: "${id}") { id name }`).join(' ')} }`;

async function lookups(): Promise<string[][]> {
  const entities = 'query($r: [_Any!]!) { _entities(representations: $r) { ... on Pet { id name } } }';
  const variables = { r: IDS.map((id) => ({ __typename: 'Pet', id })) };
  const rows: string[][] = [];
  for (const lookup of ['list', 'legacy', 'auto']) {
    for (const [shape, query, options] of [
      ['100 aliased pet(id:)', ALIASED, {}],
      ['100 _entities representations', entities, { variables }],
    ] as const) {
      const target = await stack({ PET_LOOKUP: lookup, MAX_TOKENS: '5000' }, { seed });
      const response = await gql(target.url, query, options);
      if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
      const count = (operation: string) => String(target.records.filter((r) => r.operation === operation).length);
      rows.push([shape, lookup, count('listPets'), count('getPet'), String(target.records.length)]);
      await target.close();
    }
  }
  return rows;
}

/** A read-heavy mix: mostly lists of a few shapes, some lookups of popular pets, a few creates. */
function operation(n: number): string {
  if (n % 20 === 0) return `mutation { createPet(input: { name: "New ${n}", categoryId: "1" }) { pet { id } } }`;
  if (n % 20 < 4) return `{ pet(id: "${(n % 10) + 1}") { id name status } }`;
  return `{ pets(first: 20${['', ', status: AVAILABLE', ', status: SOLD'][n % 3]}) { nodes { id name } } }`;
}

/** The mix from MIX_CLIENTS loops for MIX_SECONDS against a store 5 ms away, as a real upstream is. */
async function mix(env: Record<string, string>, replicas = 1): Promise<{ served: number; upstream: number }> {
  const target = await stack(env, { seed, storeDelayMs: 5, replicas });
  const deadline = Date.now() + MIX_SECONDS * 1000;
  let served = 0;
  let counter = 0;
  const client = async () => {
    while (Date.now() < deadline) if (!(await gql(target.nextUrl(), operation(counter++))).body.errors) served++;
  };
  await Promise.all(Array.from({ length: MIX_CLIENTS }, client));
  await target.close();
  return { served, upstream: target.records.length };
}
const mixRow = (label: string, r: { served: number; upstream: number }) => [
  label,
  r.served,
  r.upstream,
  (r.served / r.upstream).toFixed(2),
];

/** (6) Reads only (a write cannot be answered stale) at twice a 20/1s plan, paced, sixty shapes in turn. */
async function overload(label: string, env: Record<string, string>): Promise<unknown[]> {
  const env20 = { PETSTORE_RATE_LIMITS: '20/1s', PETSTORE_MAX_WAIT: '500ms', ...env };
  const target = await stack(env20, { seed, storeDelayMs: 5, perWindow: 20, windowMs: 1_000 });
  const offered = 40 * SECONDS;
  const started = Date.now();
  const outcomes: Promise<{ data: boolean; stale: boolean }>[] = [];
  for (let i = 0; i < offered; i++) {
    await sleep(started + i * 25 - Date.now());
    const answer = gql(target.url, `{ pets(first: ${(i % 60) + 1}) { nodes { id name } } }`);
    outcomes.push(answer.then((r) => ({ data: !r.body.errors, stale: r.body.extensions?.stale !== undefined })));
  }
  const results = await Promise.all(outcomes);
  await target.close();
  const data = results.filter((r) => r.data).length;
  const with429 = target.records.filter((r) => r.status === 429).length;
  return [label, offered, `${((data / offered) * 100).toFixed(1)}%`, results.filter((r) => r.stale).length, with429];
}

/** (7) A heavy and a light client of the server key on a 5/1s plan. */
async function fairness(): Promise<unknown[]> {
  const env = { PETSTORE_RATE_LIMITS: '5/1s', PETSTORE_MAX_WAIT: '30s', CLIENT_ID_HEADER: 'x-client-id' };
  const target = await stack(env, { seed, storeDelayMs: 5, perWindow: 5, windowMs: 1_000 });
  const deadline = Date.now() + SECONDS * 1_000;
  const as = (client: string) => ({ headers: { 'x-client-id': client } });
  let heavyServed = 0;
  let n = 0;
  const heavy = Array.from({ length: 40 }, async () => {
    while (Date.now() < deadline) {
      const r = await gql(target.url, `{ pets(first: ${(n++ % 100) + 1}) { nodes { id } } }`, as('heavy'));
      if (!r.body.errors) heavyServed++;
    }
  });
  const waits: number[] = [];
  let lightServed = 0;
  for (let i = 0; Date.now() < deadline; i++) {
    const started = performance.now();
    const r = await gql(target.url, `{ pets(first: ${(i % 50) + 1}, status: SOLD) { nodes { id } } }`, as('light'));
    waits.push(performance.now() - started);
    if (!r.body.errors) lightServed++;
    await sleep(1_000 - (performance.now() - started));
  }
  await Promise.all(heavy);
  await target.close();
  const p95 = waits.sort((a, b) => a - b)[Math.min(waits.length - 1, Math.floor(waits.length * 0.95))] ?? 0;
  const with429 = target.records.filter((r) => r.status === 429).length;
  const served = `${((lightServed / waits.length) * 100).toFixed(0)}%`;
  return [waits.length, served, `${(p95 / 1000).toFixed(2)} s`, heavyServed, with429];
}

/** (8) The whole catalogue listed, then 100 lookups: what they cost. */
async function learnedLookups(): Promise<unknown[]> {
  const target = await stack({ PETSTORE_CACHE_TTL: '20s' }, { seed });
  const page = 'query ($after: String) { pets(first: 100, after: $after) { pageInfo { hasNextPage endCursor } } }';
  for (let after: string | null = null, more = true; more; ) {
    const response: { body: { data?: any } } = await gql(target.url, page, { variables: { after } });
    const info = response.body.data?.pets.pageInfo;
    [more, after] = [info?.hasNextPage ?? false, info?.endCursor ?? null];
  }
  const listed = target.records.length;
  const response = await gql(target.url, ALIASED);
  if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
  await target.close();
  return [listed, 100, target.records.length - listed];
}

const print = (title: string, head: string[], rows: unknown[][]) => console.log(`${title}\n\n${table(head, rows)}\n`);
print(
  `(3) Upstream requests for 100 pet lookups in one operation, catalogue of ${CATALOGUE} pets:`,
  ['operation', 'PET_LOOKUP', 'list requests', 'deprecated getPet', 'upstream total'],
  await lookups(),
);
const MIX_HEAD = ['setting', 'operations served', 'upstream requests', 'operations per upstream request'];
print(
  `(4) Read-heavy mix (80% lists of 3 shapes, 15% lookups of 10 popular pets, 5% creates; ${MIX_CLIENTS} clients, ${MIX_SECONDS} s, store 5 ms away):`,
  MIX_HEAD,
  [
    mixRow('coalescing off, cache off', await mix({ PETSTORE_COALESCE: 'false' })),
    mixRow('coalescing on, cache off (default)', await mix({})),
    mixRow('coalescing on, PETSTORE_CACHE_TTL=1s', await mix({ PETSTORE_CACHE_TTL: '1s' })),
  ],
);
const redis = await startRedis();
try {
  const one = await mix({ PETSTORE_CACHE_TTL: '1s' });
  const three = await mix({ PETSTORE_CACHE_TTL: '1s', REDIS_URL: redis.url }, 3);
  const gain = three.served / three.upstream / (one.served / one.upstream);
  print(
    '(5) The same mix through replicas, PETSTORE_CACHE_TTL=1s (with Redis the replicas share answers; clients spread round-robin):',
    ['replicas', ...MIX_HEAD.slice(1)],
    [mixRow('1', one), mixRow('3 on one Redis', three)],
  );
  console.log(`3 replicas / 1 replica: ${gain.toFixed(2)}×\n`);
} finally {
  await redis.stop();
}
print(
  `(6) Reads (lists of 60 sizes in turn) at twice a 20/1s plan for ${SECONDS} s, PETSTORE_MAX_WAIT=500ms:`,
  ['setting', 'operations offered', 'answered with data', 'of which stale', 'upstream 429s'],
  [
    await overload('no stale answers (default)', {}),
    await overload('PETSTORE_STALE_TTL=60s', { PETSTORE_STALE_TTL: '60s' }),
  ],
);
print(
  '(7) One client firing 40 concurrent loops and one sending a query a second, sharing the server key, 5/1s plan:',
  ["light client's queries", 'served', 'p95 wait', "heavy client's served", 'upstream 429s'],
  [await fairness()],
);
print(
  '(8) 100 lookups right after a list of the whole catalogue, PETSTORE_CACHE_TTL=20s:',
  ['list requests', 'lookups', 'upstream requests for the lookups'],
  [await learnedLookups()],
);
