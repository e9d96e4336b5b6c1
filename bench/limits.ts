/**
 * `npm run bench:limits`: what the rate limiting costs and what it holds.
 *
 * (1) Latency at plan rates. The built gateway as `npm start` runs it, pinned to core 1, the store
 *     in this process on core 0, queries paced open loop at 80% of the plan's rate (each its own
 *     upstream request: coalescing off), on the business plan (1,000/min), an enterprise plan of
 *     100/1s, and with PETSTORE_RATE_LIMITS=off: the limiter's cost is a plan's row against the off
 *     row, measured in one run, the three interleaved in BENCH_SLICES slices of BENCH_SLICE s.
 * (2) Overload. The free plan's shape scaled from minutes to seconds (60 requests per 1 s window)
 *     at twice that rate for BENCH_SECONDS (10): one gateway, three replicas sharing a
 *     redis-server started here, and one gateway answering stale (PETSTORE_STALE_TTL): upstream
 *     requests sent, 429s received, the share of the budget used.
 * (The fair share between a heavy and a light client is a test: test/integration/gateway/fair-share.)
 */

import { setting } from './lib/load.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, stop, stopAll } from './lib/processes.js';
import { gql, sleep, stack, startGateway, startRedis, startStore } from './lib/servers.js';
import { median, table } from './lib/text.js';

const SLICES = setting('BENCH_SLICES', 4);
const SLICE_S = setting('BENCH_SLICE', 10);
const SECONDS = setting('BENCH_SECONDS', 10);
/** Each request asks for another page size, so none is shared with another in flight. */
const query = (i: number) => `{ pets(first: ${(i % 100) + 1}) { nodes { id } } }`;
const codeOf = (r: Awaited<ReturnType<typeof gql>>) => String(r.body.errors?.[0]?.extensions?.code ?? 'data');
/** `0`, or the count with the codes: `12 (RATE_LIMITED 12)`. */
function failures(codes: string[]): string {
  const counts = new Map<string, number>();
  for (const code of codes) counts.set(code, (counts.get(code) ?? 0) + 1);
  return codes.length === 0 ? '0' : `${codes.length} (${[...counts].map(([code, n]) => `${code} ${n}`).join(', ')})`;
}
const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

/** `perSecond` queries a second for `seconds`, open loop: the latency of each answered with data, the codes of the rest. */
async function paced(url: string, perSecond: number, seconds: number, into: number[], failed: string[]) {
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < perSecond * seconds; i++) {
    await sleep(started + (i * 1000) / perSecond - performance.now());
    const sent = performance.now();
    const answer = gql(url, query(i)).then(codeOf, String);
    pending.push(
      answer.then((code) => void (code === 'data' ? into.push(performance.now() - sent) : failed.push(code))),
    );
  }
  await Promise.all(pending);
}

async function latency(): Promise<string> {
  // [row, the plan's requests a second, its settings]
  const plans: [string, number, Record<string, string>][] = [
    ['business (1,000/min)', 1000 / 60, { PETSTORE_PLAN: 'business', PETSTORE_RATE_LIMITS: '' }],
    ['enterprise, 100/1s', 100, { PETSTORE_PLAN: 'enterprise', PETSTORE_RATE_LIMITS: '100/1s' }],
    ['PETSTORE_RATE_LIMITS=off', 100, { PETSTORE_RATE_LIMITS: 'off' }],
  ];
  const store = await startStore();
  const gateways = [];
  for (const [name, rate, settings] of plans) {
    const served = await startGateway(SERVER_CORE, store.url, {
      settings: { ...settings, PETSTORE_COALESCE: 'false' },
    });
    const [perSecond, ms, failed] = [Math.round(rate * 0.8), [] as number[], [] as string[]];
    gateways.push({ name, served, url: served.url, perSecond, ms, failed });
  }
  for (const g of gateways) await paced(g.url, g.perSecond, 2, [], []); // warm-up
  for (let slice = 0; slice < SLICES; slice++) {
    for (const g of slice % 2 ? [...gateways].reverse() : gateways)
      await paced(g.url, g.perSecond, SLICE_S, g.ms, g.failed);
  }
  const rows = [];
  for (const g of gateways) {
    const sorted = [...g.ms].sort((a, b) => a - b);
    const [p50, p99] = [median(sorted), percentile(sorted, 0.99)].map((ms) => ms.toFixed(2));
    rows.push([g.name, `${g.perSecond}/s`, sorted.length, failures(g.failed), p50, p99]);
    await stop(g.served.child);
  }
  const head = ['plan', 'offered', 'answered', 'failed', 'p50 ms', 'p99 ms'];
  return `(1) Latency at 80% of the plan's rate, open loop, ${SLICES} × ${SLICE_S} s each, interleaved:\n\n${table(head, rows)}`;
}

const LIMIT = 60; // per window: the free plan's 60 a minute…
const WINDOW_MS = 1_000; // …with the minute scaled to a second

async function overload(setup: string, replicas: number, more: Record<string, string> = {}): Promise<unknown[]> {
  const env: Record<string, string> = {
    PETSTORE_RATE_LIMITS: `${LIMIT}/1s`,
    PETSTORE_MAX_WAIT: '2s',
    // Joining identical queries in flight would serve some without budget: the limiter alone here.
    PETSTORE_COALESCE: 'false',
    ...more,
  };
  const target = await stack(env, { replicas, perWindow: LIMIT, windowMs: WINDOW_MS });
  // Start on a window boundary so the budget of the run is exactly SECONDS windows.
  await sleep(WINDOW_MS - (Date.now() % WINDOW_MS));
  const start = Date.now();
  const offered = SECONDS * LIMIT * 2;
  const pending: Promise<{ code: string; stale: boolean }>[] = [];
  for (let i = 0; i < offered; i++) {
    await sleep(start + (i * SECONDS * 1_000) / offered - Date.now());
    const answer = gql(target.nextUrl(), query(i));
    pending.push(answer.then((r) => ({ code: codeOf(r), stale: r.body.extensions?.stale !== undefined })));
  }
  const outcomes = await Promise.all(pending);
  await target.close();
  const records = target.records;
  const inRun = records.filter((r) => r.receivedAt >= start && r.receivedAt < start + SECONDS * 1_000);
  const count = (code: string) => outcomes.filter((outcome) => outcome.code === code).length;
  const budget = (inRun.filter((r) => r.status === 200).length / (SECONDS * LIMIT)) * 100;
  const upstream429 = records.filter((r) => r.status === 429).length;
  const stale = outcomes.filter((outcome) => outcome.stale).length;
  const counts = [count('data'), stale, count('RATE_LIMITED'), records.length, upstream429];
  return [setup, offered, ...counts, `${budget.toFixed(1)}%`];
}

pinSelf(LOAD_CORE);
try {
  console.log(`${await latency()}\n`);
  const redis = await startRedis();
  const rows = [
    await overload('1 gateway', 1),
    await overload('3 gateways, one Redis', 3, { REDIS_URL: redis.url }),
    await overload('1 gateway, PETSTORE_STALE_TTL=60s', 1, { PETSTORE_STALE_TTL: '60s' }),
  ];
  await redis.stop();
  const head = ['setup', 'offered', 'answered with data', 'of which stale', 'RATE_LIMITED'];
  console.log(
    `(2) ${LIMIT} requests per ${WINDOW_MS} ms window (the free plan's shape scaled to seconds), 2× overload for ${SECONDS} s, PETSTORE_MAX_WAIT=2s, coalescing off:\n\n${table([...head, 'upstream requests', 'upstream 429s', 'budget used'], rows)}\n`,
  );
} finally {
  await stopAll();
}
// The store runs in this process: exit, and the 'exit' handler stops every child left.
process.exit(0);
