/**
 * `npm run bench:economy`: how many upstream requests the built gateway spends (counts, not speed;
 * the store and the clients in this process on core 0, the gateways on core 1):
 *
 *   (1) one operation with 100 pet lookups (aliased pet(id:), and 100 `_entities` representations)
 *       on a 1,000-pet catalogue, with PET_LOOKUP=list, legacy and auto;
 *   (2) a read-heavy mix from 40 concurrent clients: operations served per upstream request, with
 *       coalescing and the per-key cache off and on;
 *   (3) the same mix through 1 replica and through 3 replicas on one Redis, PETSTORE_CACHE_TTL=1s.
 *
 * Rate limits are off: these measure what reaches the upstream, not pacing (bench:limits does).
 */

import type { Pet } from '../src/petstore/store.js';
import { gql, stack, startRedis } from './lib/servers.js';
import { table } from './lib/text.js';

const CATALOGUE = 1_000;
const MIX_CLIENTS = 40;
const MIX_SECONDS = Number(process.env.BENCH_MIX_SECONDS ?? 5);
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
  const target = await stack(env, { seed, delayMs: 5, replicas });
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

const print = (title: string, head: string[], rows: unknown[][]) => console.log(`${title}\n\n${table(head, rows)}\n`);
print(
  `(1) Upstream requests for 100 pet lookups in one operation, catalogue of ${CATALOGUE} pets:`,
  ['operation', 'PET_LOOKUP', 'list requests', 'deprecated getPet', 'upstream total'],
  await lookups(),
);
const MIX_HEAD = ['setting', 'operations served', 'upstream requests', 'operations per upstream request'];
print(
  `(2) Read-heavy mix (80% lists of 3 shapes, 15% lookups of 10 popular pets, 5% creates; ${MIX_CLIENTS} clients, ${MIX_SECONDS} s, store 5 ms away):`,
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
    '(3) The same mix through replicas, PETSTORE_CACHE_TTL=1s (with Redis the replicas share answers; clients spread round-robin):',
    ['replicas', ...MIX_HEAD.slice(1)],
    [mixRow('1', one), mixRow('3 on one Redis', three)],
  );
  console.log(`3 replicas / 1 replica: ${gain.toFixed(2)}×\n`);
} finally {
  await redis.stop();
}
