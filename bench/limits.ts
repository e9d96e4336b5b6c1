/**
 * `npm run bench:limits`: what the rate limiting costs and what it holds.
 *
 * (1) Latency at plan rates. The built gateway (dist/, as `npm start` runs it) pinned to core 1,
 *     the store (bench/store.ts) on core 0, queries paced open-loop at 80% of the plan's rate from
 *     this process (each its own upstream request: coalescing off, no cache), on the business plan
 *     (1,000/min), an enterprise plan of 100/1s, and with PETSTORE_RATE_LIMITS=off. With
 *     BENCH_BASELINE=<git ref>[,<ref>…] the same load runs against each ref too, built in a temporary
 *     git worktree (node_modules linked to ours), all interleaved in BENCH_SLICES slices of
 *     BENCH_SLICE seconds each (default 4 × 10 s), so both see the same machine. p50/p99 per build.
 * (2) Overload. The free plan's shape scaled from minutes to seconds (60 requests per 1 s window)
 *     at twice that rate for BENCH_SECONDS (10), in process, through one gateway and through three
 *     replicas sharing a redis-server started here: upstream requests sent, 429s received, the share
 *     of the budget used.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setting } from './lib/load.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, stop, stopAll } from './lib/processes.js';
import { startGateway, startStore } from './lib/servers.js';
import { gql, sleep, stack, startRedis } from './lib/stack.js';
import { median, table } from './lib/text.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASELINE = process.env.BENCH_BASELINE;
const SLICES = setting('BENCH_SLICES', 4);
const SLICE_S = setting('BENCH_SLICE', 10);
/** Each request asks for another page size, so none is shared with another in flight. */
const query = (i: number) => `{ pets(first: ${(i % 100) + 1}) { nodes { id } } }`;
/** `0`, or the count with the codes: `12 (RATE_LIMITED 12)`. */
function failures(codes: string[]): string {
  const counts = new Map<string, number>();
  for (const code of codes) counts.set(code, (counts.get(code) ?? 0) + 1);
  return codes.length === 0 ? '0' : `${codes.length} (${[...counts].map(([code, n]) => `${code} ${n}`).join(', ')})`;
}
const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

/** `ref` built in a temporary worktree; returns its folder and a function that removes it. */
function buildRef(ref: string): { root: string; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), 'bench-baseline-'));
  execFileSync('git', ['worktree', 'add', '--detach', '--force', root, ref], { cwd: ROOT, stdio: 'ignore' });
  const remove = () => execFileSync('git', ['worktree', 'remove', '--force', root], { cwd: ROOT, stdio: 'ignore' });
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  } catch (error) {
    remove();
    throw error;
  }
  return { root, remove };
}

/** `perSecond` queries a second for `seconds`, open loop: the latency of each answered with data, the codes of the rest. */
async function paced(url: string, perSecond: number, seconds: number, into: number[], failed: string[]) {
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < perSecond * seconds; i++) {
    await sleep(started + (i * 1000) / perSecond - performance.now());
    const sent = performance.now();
    const answer = gql(url, query(i)).then((r) => r.body.errors?.[0]?.extensions?.code ?? 'data', String);
    pending.push(
      answer.then((code) => void (code === 'data' ? into.push(performance.now() - sent) : failed.push(String(code)))),
    );
  }
  await Promise.all(pending);
}

async function latency(): Promise<string> {
  const baselines = (BASELINE?.split(',') ?? []).filter(Boolean).map((ref) => ({ name: ref, ...buildRef(ref) }));
  const builds = [{ name: 'this build', root: ROOT }, ...baselines];
  const plans: { name: string; rate: number; settings: Record<string, string> }[] = [
    {
      name: 'business (1,000/min)',
      rate: 1000 / 60,
      settings: { PETSTORE_PLAN: 'business', PETSTORE_RATE_LIMITS: '' },
    },
    {
      name: 'enterprise, 100/1s',
      rate: 100,
      settings: { PETSTORE_PLAN: 'enterprise', PETSTORE_RATE_LIMITS: '100/1s' },
    },
    { name: 'PETSTORE_RATE_LIMITS=off', rate: 100, settings: { PETSTORE_RATE_LIMITS: 'off' } },
  ];
  const rows: string[][] = [];
  try {
    const store = await startStore();
    for (const plan of plans) {
      const perSecond = Math.round(plan.rate * 0.8);
      const gateways = [];
      for (const build of builds) {
        const settings = { ...plan.settings, PETSTORE_COALESCE: 'false' };
        const served = await startGateway(SERVER_CORE, store.url, { root: build.root, settings });
        gateways.push({
          build,
          served,
          url: new URL('/graphql', served.url).href,
          ms: [] as number[],
          failed: [] as string[],
        });
      }
      for (const g of gateways) await paced(g.url, perSecond, 2, [], []); // warm-up
      for (let slice = 0; slice < SLICES; slice++) {
        for (const g of slice % 2 ? [...gateways].reverse() : gateways) {
          await paced(g.url, perSecond, SLICE_S, g.ms, g.failed);
        }
      }
      for (const g of gateways) {
        const sorted = [...g.ms].sort((a, b) => a - b);
        rows.push([plan.name, `${perSecond}/s`, g.build.name, String(sorted.length), failures(g.failed)]);
        rows[rows.length - 1]?.push(median(sorted).toFixed(2), percentile(sorted, 0.99).toFixed(2));
        await stop(g.served.child);
      }
      const [ours, ...theirs] = rows.slice(-gateways.length);
      for (const other of ours ? theirs : []) {
        const diff = (i: number) => `**${(Number(ours?.[i]) - Number(other[i])).toFixed(2)}**`;
        rows.push([plan.name, '', `this build − ${other[2]}`, '', '', diff(5), diff(6)]);
      }
    }
  } finally {
    await stopAll();
    for (const baseline of baselines) baseline.remove();
  }
  const head = ['plan', 'offered', 'build', 'answered', 'failed', 'p50 ms', 'p99 ms'];
  return `(1) Latency at 80% of the plan's rate, open loop, ${SLICES} × ${SLICE_S} s per build${BASELINE ? `, interleaved with ${BASELINE}` : ''}:\n\n${table(head, rows)}`;
}

const LIMIT = 60; // per window: the free plan's 60 a minute…
const WINDOW_MS = 1_000; // …with the minute scaled to a second
const SECONDS = setting('BENCH_SECONDS', 10);

async function overload(setup: string, replicas: number, redisUrl?: string): Promise<unknown[]> {
  const env: Record<string, string> = {
    PETSTORE_RATE_LIMITS: `${LIMIT}/1s`,
    PETSTORE_MAX_WAIT: '2s',
    // Joining identical queries in flight would serve some without budget: the limiter alone here.
    PETSTORE_COALESCE: 'false',
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
  };
  const target = await stack(env, { replicas, perWindow: LIMIT, windowMs: WINDOW_MS });
  // Start on a window boundary so the budget of the run is exactly SECONDS windows.
  await sleep(WINDOW_MS - (Date.now() % WINDOW_MS));
  const start = Date.now();
  const offered = SECONDS * LIMIT * 2;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < offered; i++) {
    await sleep(start + (i * SECONDS * 1_000) / offered - Date.now());
    pending.push(gql(target.nextUrl(), query(i)).then((r) => r.body.errors?.[0]?.extensions?.code ?? 'ok'));
  }
  const outcomes = await Promise.all(pending);
  await target.close();
  const records = target.records;
  const inRun = records.filter((r) => r.receivedAt >= start && r.receivedAt < start + SECONDS * 1_000);
  const count = (code: string) => outcomes.filter((outcome) => outcome === code).length;
  const budget = (inRun.filter((r) => r.status === 200).length / (SECONDS * LIMIT)) * 100;
  const upstream429 = records.filter((r) => r.status === 429).length;
  return [setup, offered, count('ok'), count('RATE_LIMITED'), records.length, upstream429, `${budget.toFixed(1)}%`];
}

pinSelf(LOAD_CORE);
if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('bench:limits runs dist/main.js: npm run build first');
console.log(`${await latency()}\n`);
const redis = await startRedis();
try {
  const rows = [await overload('1 gateway', 1), await overload('3 gateways, one Redis', 3, redis.url)];
  const head = ['setup', 'offered', 'served', 'RATE_LIMITED', 'upstream requests', 'upstream 429s', 'budget used'];
  console.log(
    `(2) ${LIMIT} requests per ${WINDOW_MS} ms window (the free plan's shape scaled to seconds), 2× overload for ${SECONDS} s, PETSTORE_MAX_WAIT=2s:\n\n${table(head, rows)}`,
  );
} finally {
  await redis.stop();
}
// The store runs in this process: exit, and the 'exit' handler stops every child left.
process.exit(0);
