/**
 * `npm run bench:throughput`: this gateway side by side with REST direct, Tailcall and GraphQL Mesh,
 * in one run, printed as Markdown (docs/benchmarks.md quotes it).
 *
 * Workloads:
 *   one call      the same page of 20 pets on every request: what sharing identical requests in
 *                 flight can flatter; then peak RSS while 200 connections send it
 *   distinct mix  ~1,400 different pages (sizes 1–100, status filters, cursors) in turn
 *                 (bench/lib/mix.ts), GraphQL with variables: every request its own upstream call;
 *                 on every target that answers every page as the store does
 *
 * The server under test runs pinned to core 1, the store, wrk and this script on core 0. The store's
 * key has limits no run reaches and the gateway runs with PETSTORE_RATE_LIMITS=off: plumbing, not
 * rate limiting (bench:limits measures that). Each target gets a warm-up, then BENCH_ROUNDS runs
 * interleaved across targets, each right after BENCH_REWARM seconds of unmeasured load (a target
 * waits over a minute between its runs, and V8 answers the first seconds after such a pause slower);
 * the tables show medians. A peer that is not installed (bench/tailcall, bench/mesh) is skipped with
 * a note. Settings: BENCH_CONNECTIONS (32), BENCH_WARMUP (5 s), BENCH_REWARM (2 s), BENCH_DURATION
 * (10 s), BENCH_ROUNDS (3).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LoadOptions, load, requireWrk, setting } from './lib/load.js';
import { checkMix, meanPageSize, walkMix } from './lib/mix.js';
import { meshSkipped, startMesh, startTailcall, tailcallVersion } from './lib/peers.js';
import { LOAD_CORE, peakRss, pinSelf, rssMb, SERVER_CORE, stopAll } from './lib/processes.js';
import { formatReport, loadAverage, median, ROW, type Row } from './lib/report.js';
import { BENCH_KEY, type Served, startGateway, startStore, storeCounts } from './lib/servers.js';
import {
  gatewayTarget,
  type HttpRequest,
  meshTarget,
  ONE_CALL,
  restTarget,
  send,
  type Target,
  tailcallTarget,
} from './lib/targets.js';

const CONNECTIONS = setting('BENCH_CONNECTIONS', 32);
const WARMUP_S = setting('BENCH_WARMUP', 5);
const REWARM_S = setting('BENCH_REWARM', 2, 0);
const DURATION_S = setting('BENCH_DURATION', 10);
const ROUNDS = setting('BENCH_ROUNDS', 3);
const RSS_CONNECTIONS = 200;

const began = performance.now();
const progress = (line: string): void =>
  void process.stderr.write(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

/** The store, then every target in row order; a peer that is not installed becomes a note. */
async function startTargets(dir: string, notes: string[]): Promise<{ store: Served; targets: Target[] }> {
  const store = await startStore(LOAD_CORE);
  const targets: Target[] = [restTarget(ROW.rest, store.url, BENCH_KEY, store.pid)];
  const tailcall = tailcallVersion(dir);
  if ('skipped' in tailcall) notes.push(tailcall.skipped);
  else {
    for (const dedupe of [true, false]) {
      const peer = await startTailcall(SERVER_CORE, store.url, BENCH_KEY, dedupe, dir);
      targets.push(tailcallTarget(dedupe ? ROW.tailcallDedupe : ROW.tailcall, peer.url, peer.pid, peer.log));
    }
  }
  const on = await startGateway(SERVER_CORE, store.url);
  targets.push(gatewayTarget(ROW.gateway, on.url, on.pid));
  const off = await startGateway(SERVER_CORE, store.url, { settings: { PETSTORE_COALESCE: 'false' } });
  targets.push(gatewayTarget(ROW.gatewayOff, off.url, off.pid));
  const mesh = meshSkipped();
  if (mesh !== undefined) notes.push(mesh);
  else {
    const peer = await startMesh(SERVER_CORE, store.url, BENCH_KEY, dir);
    targets.push(meshTarget(ROW.mesh, peer.url, peer.pid, peer.log));
  }
  return { store, targets };
}

/** True once `target` answers the one-call request with 20 pets; throws after 30 s. */
async function answersOneCall(target: Target, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const answer = await send(target, target.request(ONE_CALL)).catch((error) => ({ text: String(error), body: 0 }));
    if (target.ids(answer.body)?.length === 20) return;
    last = answer.text.slice(0, 300);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${target.name} did not answer correctly: ${last}${target.log ? ` (log: ${target.log})` : ''}`);
}

/** Warm-up, then ROUNDS measured runs interleaved across targets; a refused upstream request stops the bench. */
async function runWorkload(
  name: string,
  targets: readonly Target[],
  requests: (target: Target) => HttpRequest[],
  store: Served,
  options: Omit<LoadOptions, 'seconds'>,
): Promise<Row[]> {
  for (const target of targets) {
    progress(`${name}: warm-up: ${target.name}`);
    await load(target, requests(target), { ...options, seconds: WARMUP_S });
  }
  const runs = targets.map(() => [] as { rps: number; p50: number; p99: number; cpu: number; upstream: number }[]);
  const errors = targets.map(() => 0);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, target] of targets.entries()) {
      if (REWARM_S > 0) await load(target, requests(target), { ...options, seconds: REWARM_S });
      const before = await storeCounts(store.child);
      const m = await load(target, requests(target), { ...options, seconds: DURATION_S });
      const after = await storeCounts(store.child);
      if (after.notOk > before.notOk)
        throw new Error(`${target.name}: the store refused ${after.notOk - before.notOk}`);
      const upstream = (after.requests - before.requests) / m.requests;
      runs[index]?.push({ rps: m.rps, p50: m.p50Ms, p99: m.p99Ms, cpu: (m.cpuS * 1000) / m.requests, upstream });
      errors[index] = (errors[index] ?? 0) + m.errors;
      progress(`${name}: round ${round}: ${target.name}: ${m.rps.toFixed(0)} req/s, p99 ${m.p99Ms.toFixed(2)} ms`);
      await answersOneCall(target, 5_000);
    }
  }
  return targets.map((target, index) => {
    const of = (pick: (run: { rps: number; p50: number; p99: number; cpu: number; upstream: number }) => number) =>
      median((runs[index] ?? []).map(pick));
    const [rps, p50, p99] = [of((r) => r.rps), of((r) => r.p50), of((r) => r.p99)];
    const [cpuMsPerRequest, upstreamPerRequest] = [of((r) => r.cpu), of((r) => r.upstream)];
    return { target, rps, p50, p99, cpuMsPerRequest, upstreamPerRequest, errors: errors[index] ?? 0 };
  });
}

async function main(dir: string): Promise<string> {
  pinSelf(LOAD_CORE);
  const loadAtStart = loadAverage();
  const notes: string[] = [];
  const { store, targets } = await startTargets(dir, notes);
  for (const target of targets) await answersOneCall(target);
  const options = { connections: CONNECTIONS, dir };

  progress('mix: walking every page through a gateway started for the walk');
  const pages = await walkMix(SERVER_CORE, store.url);
  const rest = targets[0] as Target;
  const expected: string[][] = [];
  for (const page of pages) expected.push(rest.ids((await send(rest, rest.request(page))).body) ?? []);
  const able: Target[] = [];
  for (const target of targets) {
    const check = await checkMix(target, pages, expected);
    if (check.mismatch !== undefined) notes.push(`Distinct mix: ${target.name} skipped: ${check.mismatch}`);
    else able.push(target);
    if (check.rounded !== undefined) notes.push(`${target.name}: ${check.rounded}.`);
  }

  const oneCall = await runWorkload('one call', targets, (t) => [t.request(ONE_CALL)], store, options);
  const mixRows = await runWorkload(
    'mix',
    able,
    (t) => pages.map((page) => t.request(page, 'variables')),
    store,
    options,
  );
  const withRss = [];
  for (const row of oneCall) {
    progress(`memory: ${RSS_CONNECTIONS} connections: ${row.target.name}`);
    const idle = rssMb(row.target.pid);
    const run = () =>
      load(row.target, [row.target.request(ONE_CALL)], { dir, connections: RSS_CONNECTIONS, seconds: 5 });
    withRss.push({ ...row, rss: { idle, peak: await peakRss(row.target.pid, run) } });
  }
  const script = process.env.npm_lifecycle_event;
  return formatReport({
    command: `${script?.startsWith('bench') ? `npm run ${script}` : 'tsx bench/throughput.ts'} (BENCH_CONNECTIONS=${CONNECTIONS} BENCH_WARMUP=${WARMUP_S} BENCH_REWARM=${REWARM_S} BENCH_DURATION=${DURATION_S} BENCH_ROUNDS=${ROUNDS})`,
    method: `one thread, closed loop, ${CONNECTIONS} connections; per target ${WARMUP_S} s warm-up, then ${ROUNDS} × ${DURATION_S} s runs interleaved across targets, each after ${REWARM_S} s of unmeasured load; medians. Servers under test on core ${SERVER_CORE}, the store and wrk on core ${LOAD_CORE}. "server CPU" is the answering process's (REST direct: the store's).`,
    loadAtStart,
    oneCall: withRss,
    rssConnections: RSS_CONNECTIONS,
    mix: { pages: pages.length, meanSize: meanPageSize(expected), rows: mixRows },
    notes,
  });
}

requireWrk();
const dir = mkdtempSync(join(tmpdir(), 'bench-throughput-'));
try {
  process.stdout.write(`\n${await main(dir)}\n`);
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
