/**
 * `npm run bench:economy`: how many upstream requests the gateway spends, in one run, in process
 * (counts, not speed, so sharing a core does not skew them):
 *
 *   (3) one operation with 100 pet lookups (aliased pet(id:), and 100 `_entities` representations)
 *       on a 1,000-pet catalogue, with PET_LOOKUP=list, legacy and auto;
 *   (4) a read-heavy mix from 40 concurrent clients, GraphQL operations served per upstream request,
 *       with coalescing and the per-key cache off and on.
 *
 * Rate limits are off: this measures what reaches the upstream, not pacing.
 */

import { parseConfig } from '../src/config.js';
import { createGateway } from '../src/gateway/server.js';
import type { RequestRecord } from '../src/petstore/app.js';
import { startPetstore } from '../src/petstore/start.js';
import type { Pet } from '../src/petstore/store.js';
import { gql } from '../test/helpers/gql.js';

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

async function stack(env: Record<string, string>, storeDelayMs = 0) {
  const records: RequestRecord[] = [];
  const store = await startPetstore({
    keys: { [KEY]: { perMinute: 1e9, perDay: 1e12 } },
    seed: catalogue(),
    responseDelayMs: storeDelayMs,
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
  const gateway = await createGateway(config, { host: '127.0.0.1' });
  return {
    url: gateway.url,
    records,
    async close() {
      await gateway.close();
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

async function mix(label: string, env: Record<string, string>): Promise<string> {
  // A store 5 ms away, as a real upstream is, so requests overlap as they would in production.
  const target = await stack(env, 5);
  const deadline = Date.now() + MIX_SECONDS * 1000;
  let served = 0;
  let counter = 0;
  await Promise.all(
    Array.from({ length: MIX_CLIENTS }, async () => {
      while (Date.now() < deadline) {
        const response = await gql(target.url, operation(counter++));
        if (!response.body.errors) served++;
      }
    }),
  );
  const upstream = target.records.length;
  await target.close();
  return `| ${label} | ${served} | ${upstream} | ${(served / upstream).toFixed(2)} |`;
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
