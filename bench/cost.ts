/**
 * `npm run bench:cost`: what a plan in force costs, beside the same build with
 * PETSTORE_RATE_LIMITS=off, in one run (the gateway as `npm start` runs it on core 1, the store, wrk
 * and this script on core 0; BENCH_NODE=<node> runs the gateways on another Node line):
 *
 * (1) throughput, closed loop, 32 connections, coalescing off, a plan that is never reached
 *     (1000000/1m): one API key, and 1,000 keys in turn; the plan also with a young generation of
 *     32 MB semi-spaces (`npm start` sets 16, Node 20's default). BENCH_ROUNDS interleaved runs.
 * (2) new keys: 5,000 requests, each with a key the upstream has never seen and refuses (the
 *     defaults: the free plan), against the same with throttling off: time and RSS; and the heap a
 *     key the upstream accepts keeps, idle, over 5,000 of them.
 * (3) Redis: two replicas on one redis-server, the same plan, 400 queries: per upstream request, the
 *     commands Redis ran, the ones the gateways sent (round trips) and Redis's CPU time (I/O
 *     included); then Redis saturated by bench/redis-capacity.ts, so how many upstream requests one
 *     Redis core carries (BENCH_COMPARE=<another checkout> measures that build beside this one).
 * BENCH_PARTS=1,2 runs only those parts.
 */

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { load, requireWrk, setting } from './lib/load.js';
import { LOAD_CORE, pinSelf, rssMb, SERVER_CORE, stop, stopAll } from './lib/processes.js';
import { GATEWAY_NODE, gql, startGateway, startRedis, startStore } from './lib/servers.js';
import type { HttpRequest } from './lib/targets.js';
import { median, table } from './lib/text.js';

const ROUNDS = setting('BENCH_ROUNDS', 3);
const SECONDS = setting('BENCH_DURATION', 10);
const KEYS = 1_000;
const NEW_KEYS = 5_000;
const PLAN = { PETSTORE_RATE_LIMITS: '1000000/1m', PETSTORE_COALESCE: 'false' };
const OFF = { PETSTORE_RATE_LIMITS: 'off', PETSTORE_COALESCE: 'false' };
const dir = mkdtempSync(join(tmpdir(), 'bench-cost-'));

/** Queries of 1–5 pets of one status each (each its own upstream request), asked with `keys` in turn. */
function requests(keys: readonly string[]): HttpRequest[] {
  const statuses = ['AVAILABLE', 'PENDING', 'SOLD'];
  return Array.from({ length: Math.max(keys.length, 30) }, (_, i) => ({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[i % keys.length]}` },
    body: JSON.stringify({ query: `{ pets(first: ${(i % 5) + 1}, status: ${statuses[i % 3]}) { nodes { id } } }` }),
  }));
}

async function throughput(): Promise<string> {
  const keys = Array.from({ length: KEYS }, (_, i) => `bench-key-${i}`);
  const store = await startStore({ extraKeys: keys });
  const variants = [
    ['off', OFF, []],
    ['plan in force', PLAN, []],
    ['plan in force, `--max-semi-space-size=32`', PLAN, ['--max-semi-space-size=32']],
  ] as const;
  const rows: unknown[][] = [];
  for (const [workload, list] of [
    ['one key', requests(['k'])],
    ['1,000 keys', requests(keys)],
  ] as const) {
    const gateways = [];
    for (const [name, settings, nodeArgs] of variants) {
      const started = await startGateway(SERVER_CORE, store.url, { settings, nodeArgs: [...nodeArgs] });
      gateways.push({
        name,
        started,
        target: { origin: new URL(started.url).origin, pid: started.pid },
        runs: [] as Run[],
      });
    }
    for (const g of gateways) await load(g.target as never, list, { seconds: 3, connections: 32, dir });
    for (let round = 0; round < ROUNDS; round++) {
      for (const g of round % 2 ? [...gateways].reverse() : gateways) {
        g.runs.push(await load(g.target as never, list, { seconds: SECONDS, connections: 32, dir }));
      }
    }
    const off = median((gateways[0] as { runs: Run[] }).runs.map((r) => r.rps));
    for (const g of gateways) {
      const rps = median(g.runs.map((r) => r.rps));
      const cpu = median(g.runs.map((r) => (r.cpuS * 1000) / r.requests));
      const p50 = median(g.runs.map((r) => r.p50Ms));
      const rss = rssMb(g.started.pid);
      rows.push([
        workload,
        g.name,
        Math.round(rps),
        `${((rps / off) * 100).toFixed(0)}%`,
        p50.toFixed(2),
        cpu.toFixed(3),
        rss.toFixed(0),
      ]);
      await stop(g.started.child);
    }
  }
  await store.close();
  const head = ['workload', 'gateway', 'req/s', 'of off', 'p50 ms', 'CPU ms/request', 'RSS MB after'];
  return `(1) A plan in force that is never reached, against PETSTORE_RATE_LIMITS=off, ${ROUNDS} × ${SECONDS} s interleaved, medians:\n\n${table(head, rows)}`;
}
type Run = Awaited<ReturnType<typeof load>>;

/** `count` queries, each with a key of `keyOf(i)`, 32 at a time: wall time and RSS growth of the gateway. */
async function keysThrough(url: string, pid: number, count: number, keyOf: (i: number) => string) {
  const rssBefore = rssMb(pid);
  const started = performance.now();
  for (let next = 0; next < count; ) {
    const batch = Array.from({ length: Math.min(32, count - next) }, () => next++);
    await Promise.all(
      batch.map((i) =>
        gql(url, '{ pets(first: 1) { nodes { id } } }', { headers: { authorization: `Bearer ${keyOf(i)}` } }),
      ),
    );
  }
  return { ms: performance.now() - started, rssMb: rssMb(pid) - rssBefore };
}

/** The gateway's V8 heap in use (/metrics), the least of a few readings 300 ms apart (garbage not yet collected inflates any one). */
async function heapUsedMb(url: string): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 8; i++) {
    const text = await (await fetch(new URL('/metrics', url))).text();
    readings.push(Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1]) / 2 ** 20);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return Math.min(...readings);
}

async function newKeys(): Promise<string> {
  const accepted = Array.from({ length: NEW_KEYS }, (_, i) => `idle-key-${i}`);
  const store = await startStore({ extraKeys: accepted });
  const rows: unknown[][] = [];
  for (const [name, settings] of [
    ['off', { PETSTORE_RATE_LIMITS: 'off' }],
    ['the free plan (the default)', { PETSTORE_RATE_LIMITS: '' }],
  ] as const) {
    const gateway = await startGateway(SERVER_CORE, store.url, { settings });
    const run = Date.now().toString(36);
    await keysThrough(gateway.url, gateway.pid, 500, (i) => `warm-up-${run}-${i}`);
    const refused = await keysThrough(gateway.url, gateway.pid, NEW_KEYS, (i) => `refused-${run}-${i}`);
    const heapBefore = await heapUsedMb(gateway.url);
    await keysThrough(gateway.url, gateway.pid, NEW_KEYS, (i) => accepted[i] as string);
    const perKeyKb = (((await heapUsedMb(gateway.url)) - heapBefore) * 1024) / NEW_KEYS;
    rows.push([name, (refused.ms / NEW_KEYS).toFixed(3), refused.rssMb.toFixed(0), perKeyKb.toFixed(1)]);
    await stop(gateway.child);
  }
  await store.close();
  const head = ['gateway', 'ms per new refused key', 'RSS growth MB', 'heap KB per idle accepted key'];
  return `(2) ${NEW_KEYS.toLocaleString('en')} new keys, 32 at a time, on Node ${execFileSync(GATEWAY_NODE, ['--version'], { encoding: 'utf8' }).trim()}:\n\n${table(head, rows)}`;
}

async function redisCost(): Promise<string> {
  const redis = await startRedis();
  const port = new URL(redis.url).port;
  const cli = (...args: string[]) => execFileSync('redis-cli', ['-p', port, ...args], { encoding: 'utf8' });
  const cpuSeconds = () => {
    const info = cli('INFO', 'cpu');
    const read = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return read('used_cpu_user') + read('used_cpu_sys');
  };
  const store = await startStore();
  const settings = { ...PLAN, REDIS_URL: redis.url };
  const replicas = [
    await startGateway(SERVER_CORE, store.url, { settings }),
    await startGateway(SERVER_CORE, store.url, { settings }),
  ];
  const query = (i: number) =>
    gql((replicas[i % 2] as { url: string }).url, `{ pets(first: ${(i % 100) + 1}) { nodes { id } } }`);
  /** 400 queries 8 at a time; the upstream requests they made. */
  const load = async (from: number) => {
    const before = store.counts().requests;
    for (let i = from; i < from + 400; i += 8) await Promise.all(Array.from({ length: 8 }, (_, j) => query(i + j)));
    return store.counts().requests - before;
  };
  for (let i = 0; i < 20; i++) await query(i);
  // Redis's own upkeep (serverCron, ten times a second) is not the requests' cost: measured idle, taken off.
  const idleFrom = cpuSeconds();
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const idlePerMs = (cpuSeconds() - idleFrom) / 2_000;
  // Pass 1: what Redis runs (commands inside scripts included) and the CPU it spends, I/O included.
  cli('CONFIG', 'RESETSTAT');
  const cpuBefore = cpuSeconds();
  const startedAt = performance.now();
  const upstream = await load(1_000);
  const wall = performance.now() - startedAt;
  const cpu = cpuSeconds() - cpuBefore - idlePerMs * wall;
  let commands = 0;
  let scripts = 0;
  // Summed as the baseline was: a script's own commands count in it and again by themselves.
  let usec = 0;
  for (const [, name, calls, spent] of cli('INFO', 'commandstats').matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)) {
    if (name === 'fcall' || name === 'evalsha' || name === 'eval') scripts += Number(calls);
    commands += Number(calls);
    usec += Number(spent);
  }
  // Pass 2, watched by MONITOR (which costs Redis time, so not in pass 1): the commands the
  // gateways sent, i.e. their round trips; the ones scripts ran are marked "lua" and left out.
  const monitor = spawn('redis-cli', ['-p', port, 'monitor'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let sent = 0;
  let rest = '';
  monitor.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) if (/^\d+\.\d+ \[\d+ (?!lua)/.test(line)) sent++;
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const sentBefore = sent;
  const watched = await load(2_000);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const roundTrips = sent - sentBefore;
  monitor.kill();
  // The gateways leave the other core to the saturating driver.
  for (const replica of replicas) await stop(replica.child);
  const capacity = saturated(port);
  await stopAll();
  await redis.stop();
  const head = [
    'upstream requests',
    'commands Redis ran per request (scripts)',
    'sent per request (round trips)',
    'Redis time per request, µs (in commands; CPU)',
  ];
  const row = [
    upstream,
    `${(commands / upstream).toFixed(1)} (${(scripts / upstream).toFixed(1)})`,
    (roundTrips / watched).toFixed(1),
    `${(usec / upstream).toFixed(0)}; ${((cpu * 1e6) / upstream).toFixed(0)}`,
  ];
  const saturatedHead = ['build', 'Redis CPU µs per request', 'upstream requests/s one Redis core carries', 'reached'];
  return `(3) Two replicas on one redis-server, the same plan, 400 queries 8 at a time (INFO commandstats and cpu; MONITOR in a second pass):\n\n${table(head, [row])}\n\nSaturated, driven as the gateway drives it (bench/redis-capacity.ts):\n\n${table(saturatedHead, capacity)}`;
}

/**
 * What one Redis core carries when saturated, driven as the gateway drives it (bench/redis-capacity.ts
 * on the other core: two connections, many calls in flight on each, 1,000 keys): this build, and
 * beside it in the same run the checkout BENCH_COMPARE names, if any (`git worktree add <dir> <rev>`),
 * twice each, interleaved; the better of each build's two.
 */
function saturated(port: string): string[][] {
  const pid = /process_id:(\d+)/.exec(
    execFileSync('redis-cli', ['-p', port, 'INFO', 'server'], { encoding: 'utf8' }),
  )?.[1];
  const builds = [['this build', resolve(import.meta.dirname, '..')]];
  if (process.env.BENCH_COMPARE) builds.push([process.env.BENCH_COMPARE, resolve(process.env.BENCH_COMPARE)]);
  const runs = new Map<string, { perSecond: number; cpuUs: number; busy: number }[]>();
  for (let round = 0; round < 2; round++) {
    for (const [name, checkout] of builds as [string, string][]) {
      const args = [
        '-c',
        SERVER_CORE,
        'npx',
        'tsx',
        'bench/redis-capacity.ts',
        `redis://127.0.0.1:${port}`,
        String(pid),
        '4',
        checkout,
      ];
      const out = execFileSync('taskset', args, { encoding: 'utf8', cwd: resolve(import.meta.dirname, '..') });
      runs.set(name, [...(runs.get(name) ?? []), JSON.parse(out.trim().split('\n').at(-1) as string)]);
    }
  }
  return [...runs].map(([name, measured]) => {
    const best = measured.reduce((a, b) => (b.cpuUs < a.cpuUs ? b : a));
    const capacity = Math.round(1e6 / best.cpuUs / 100) * 100;
    return [
      name,
      best.cpuUs.toFixed(1),
      capacity.toLocaleString('en'),
      `${Math.round(best.perSecond).toLocaleString('en')} (Redis ${Math.round(best.busy * 100)}% busy)`,
    ];
  });
}

requireWrk();
pinSelf(LOAD_CORE);
try {
  // BENCH_PARTS=1,2 runs those parts only (part 3 does not depend on the gateway's Node).
  const parts = (process.env.BENCH_PARTS ?? '1,2,3').split(',');
  const run = [throughput, newKeys, redisCost].filter((_, i) => parts.includes(String(i + 1)));
  for (const part of run) console.log(`${await part()}\n`);
} finally {
  await stopAll();
}
process.exit(0);
