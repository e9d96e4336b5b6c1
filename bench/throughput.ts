/**
 * `npm run bench:throughput`: this gateway side by side with REST direct, Tailcall and GraphQL Mesh,
 * all in one run on a 2-core machine, printed as Markdown the README can quote verbatim.
 *
 * Rows: REST direct on the reference store; Tailcall 1.0.0 with `dedupe` and without; this gateway
 * with coalescing on (the default) and off (`PETSTORE_COALESCE=false`); Mesh v1 + Hive Gateway. A
 * peer that is not installed (bench/tailcall, bench/mesh) is skipped with a one-line note.
 *
 * Workloads:
 *   one call      the same page of 20 pets on every request, `{ pets(first: 20) { nodes { id name
 *                 status } } }` or its equivalent: what sharing identical requests in flight can flatter
 *   distinct mix  ~1,400 different pages (sizes 1–100, status filters, cursors) in turn (bench/lib/mix.ts):
 *                 every request is its own upstream call, on every target that can express it
 * and a memory phase: peak resident set while 200 connections send the one-call request.
 *
 * Every server is its own process: the one under test pinned to core 1 (`taskset -c 1`), the
 * reference store, the load tool and this script on core 0. The store's key has limits no run
 * reaches and the gateway runs with PETSTORE_RATE_LIMITS=off, so all measure plumbing, not rate
 * limiting. Load: wrk (closed loop, one thread) when installed, else autocannon (one call only).
 * Each target gets a warm-up, then BENCH_ROUNDS measured runs interleaved across targets; the
 * tables show medians. Progress goes to stderr, the report to stdout.
 *
 * Settings: BENCH_TOOL (wrk | autocannon), BENCH_CONNECTIONS (32), BENCH_WARMUP (5 s),
 * BENCH_DURATION (10 s), BENCH_ROUNDS (3).
 */

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseTool, type LoadOptions, load, type Measurement, measure, type Tool } from './lib/load.js';
import { checkMix, collectMix, meanPageSize } from './lib/mix.js';
import { meshSkipped, startMesh, startTailcall, tailcallVersion } from './lib/peers.js';
import { LOAD_CORE, pinSelf, rssMb, SERVER_CORE, signalAll, stopAll } from './lib/processes.js';
import { fixed, integer, loadAverage, machine, median, percent, table, wrkVersion } from './lib/report.js';
import { BENCH_KEY, type Served, startGateway, startStore, storeCounts } from './lib/servers.js';
import {
  gatewayTarget,
  type HttpRequest,
  meshTarget,
  type PageQuery,
  restTarget,
  send,
  type Target,
  tailcallTarget,
} from './lib/targets.js';

const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const WARMUP_S = positive('BENCH_WARMUP', 5);
const DURATION_S = positive('BENCH_DURATION', 10);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const TOOL = chooseTool(process.env.BENCH_TOOL);
const RSS_CONNECTIONS = 200;
const RSS_SECONDS = 5;
const ONE_CALL: PageQuery = { limit: 20 };

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer`);
  return value;
}

const began = performance.now();
/** A progress line on stderr, with the seconds since the bench began. */
const progress = (line: string): void =>
  void process.stderr.write(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

/** The row's name for the one-call table, per target kind. */
const ROW = {
  rest: 'REST direct, `GET /v1/pets`',
  tailcallDedupe: 'Tailcall 1.0.0, `dedupe: true` on the `@http` field',
  tailcall: 'Tailcall 1.0.0, no dedupe',
  gateway: 'this gateway, coalescing on (default)',
  gatewayOff: 'this gateway, `PETSTORE_COALESCE=false`',
  mesh: 'Mesh v1 + Hive Gateway 2.15.1',
} as const;

interface Workload {
  readonly name: string;
  readonly targets: readonly Target[];
  readonly requests: (target: Target) => readonly HttpRequest[];
}

interface Row {
  readonly target: Target;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly busy: number;
  readonly cpuMsPerRequest: number;
  readonly upstreamPerRequest: number;
  readonly errors: number;
}

async function startTargets(scratch: string, notes: string[]): Promise<{ store: Served; targets: Target[] }> {
  const store = await startStore(LOAD_CORE);
  const targets: Target[] = [restTarget(ROW.rest, store.url, BENCH_KEY, store.pid)];
  const tailcall = tailcallVersion(scratch);
  if ('skipped' in tailcall) notes.push(tailcall.skipped);
  else {
    for (const dedupe of [true, false]) {
      const peer = await startTailcall(SERVER_CORE, store.url, BENCH_KEY, dedupe, scratch);
      targets.push(tailcallTarget(dedupe ? ROW.tailcallDedupe : ROW.tailcall, peer.url, peer.pid, peer.log));
    }
  }
  const on = await startGateway(SERVER_CORE, store.url);
  targets.push(gatewayTarget(ROW.gateway, on.url, on.pid));
  const off = await startGateway(SERVER_CORE, store.url, { PETSTORE_COALESCE: 'false' });
  targets.push(gatewayTarget(ROW.gatewayOff, off.url, off.pid));
  const mesh = meshSkipped();
  if (mesh !== undefined) notes.push(mesh);
  else {
    const peer = await startMesh(SERVER_CORE, store.url, BENCH_KEY, scratch);
    targets.push(meshTarget(ROW.mesh, peer.url, peer.pid, peer.log));
  }
  return { store, targets };
}

/** Waits until `target` answers the one-call request with 20 pets. */
async function waitUntilServing(target: Target, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const { status, body, text } = await send(target, target.request(ONE_CALL));
      if (status === 200 && target.ids(body)?.length === 20) return;
      last = text;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const log =
    target.log !== undefined && existsSync(target.log)
      ? `\nits log:\n${readFileSync(target.log, 'utf8').slice(-2000)}`
      : '';
  throw new Error(`${target.name} did not answer correctly within ${timeoutMs} ms: ${last.slice(0, 300)}${log}`);
}

/** The mix, and the targets that answer every page of it exactly as the store does. */
async function prepareMix(
  store: Served,
  targets: readonly Target[],
  notes: string[],
): Promise<{ mix: PageQuery[]; targets: Target[]; meanSize: number } | undefined> {
  if (TOOL !== 'wrk') {
    notes.push('Distinct mix: skipped, it needs wrk (apt-get install -y wrk); autocannon here sends one request.');
    return undefined;
  }
  const gateway = targets.find((target) => target.name === ROW.gateway) as Target;
  const rest = targets[0] as Target;
  progress('mix: walking every page through the gateway');
  const mix = await collectMix(new URL('/graphql', gateway.origin).href);
  const expected: string[][] = [];
  for (const page of mix) {
    const { body } = await send(rest, rest.request(page));
    expected.push(rest.ids(body) ?? []);
  }
  const able: Target[] = [];
  for (const target of targets) {
    progress(`mix: checking ${target.name} on ${mix.length} pages`);
    const check = await checkMix(target, mix, expected);
    if (check.mismatch !== undefined) {
      notes.push(
        `Distinct mix: ${target.name} skipped, it answered a page differently from the store: ${check.mismatch}`,
      );
      continue;
    }
    if (check.rounded !== undefined) notes.push(`${target.name}: ${check.rounded}.`);
    able.push(target);
  }
  const counts = await storeCounts(store.child);
  if (counts.notOk > 0) throw new Error(`mix: the store has refused ${counts.notOk} requests so far`);
  return { mix, targets: able, meanSize: meanPageSize(expected) };
}

/** Warm-up, then ROUNDS interleaved measured runs; the store's count gives upstream calls per request. */
async function runWorkload(workload: Workload, store: Served, options: Omit<LoadOptions, 'seconds'>): Promise<Row[]> {
  for (const target of workload.targets) {
    progress(`${workload.name}: warm-up: ${target.name}`);
    await load(target, workload.requests(target), { ...options, seconds: WARMUP_S });
  }
  const runs = workload.targets.map(() => [] as (Measurement & { upstream: number })[]);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, target] of workload.targets.entries()) {
      const before = await storeCounts(store.child);
      const m = await measure(target, workload.requests(target), { ...options, seconds: DURATION_S });
      const after = await storeCounts(store.child);
      if (after.notOk > before.notOk)
        throw new Error(`${target.name}: the store refused ${after.notOk - before.notOk} requests`);
      runs[index]?.push({ ...m, upstream: after.requests - before.requests });
      progress(
        `${workload.name}: round ${round}: ${target.name}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50Ms.toFixed(2)} ms, p99 ${m.p99Ms.toFixed(2)} ms, CPU ${percent(m.cpuS / m.wallS)}, errors ${m.errors}`,
      );
      const check = await send(target, target.request(ONE_CALL));
      if (check.status !== 200 || target.ids(check.body)?.length !== 20)
        throw new Error(`${target.name} stopped answering correctly`);
    }
  }
  return workload.targets.map((target, index) => {
    const measured = runs[index] as (Measurement & { upstream: number })[];
    return {
      target,
      rps: median(measured.map((m) => m.rps)),
      p50: median(measured.map((m) => m.p50Ms)),
      p99: median(measured.map((m) => m.p99Ms)),
      busy: median(measured.map((m) => m.cpuS / m.wallS)),
      cpuMsPerRequest: median(measured.map((m) => (m.cpuS * 1000) / m.requests)),
      upstreamPerRequest: median(measured.map((m) => m.upstream / m.requests)),
      errors: measured.reduce((sum, m) => sum + m.errors, 0),
    };
  });
}

/** Idle and peak resident set of each target's process while RSS_CONNECTIONS send the one-call request. */
async function memoryPhase(targets: readonly Target[], options: Omit<LoadOptions, 'seconds' | 'connections'>) {
  const memory = new Map<Target, { idle: number; peak: number }>();
  for (const target of targets) {
    progress(`memory: ${RSS_CONNECTIONS} connections: ${target.name}`);
    const idle = rssMb(target.pid);
    let peak = idle;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(target.pid));
    }, 100);
    await load(target, [target.request(ONE_CALL)], { ...options, seconds: RSS_SECONDS, connections: RSS_CONNECTIONS });
    clearInterval(sampler);
    memory.set(target, { idle, peak: Math.max(peak, rssMb(target.pid)) });
  }
  return memory;
}

function commandLine(tool: Tool): string {
  const settings = `BENCH_TOOL=${tool} BENCH_CONNECTIONS=${CONNECTIONS} BENCH_WARMUP=${WARMUP_S} BENCH_DURATION=${DURATION_S} BENCH_ROUNDS=${ROUNDS}`;
  const script = process.env.npm_lifecycle_event;
  return `${settings} ${script?.startsWith('bench') ? `npm run ${script}` : 'tsx bench/throughput.ts'}`;
}

async function main(): Promise<void> {
  pinSelf(LOAD_CORE);
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const notes: string[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'bench-throughput-'));
  scratchDir = scratch;
  try {
    const { store, targets } = await startTargets(scratch, notes);
    for (const target of targets) await waitUntilServing(target);
    const options = { tool: TOOL, connections: CONNECTIONS, dir: scratch };
    const mix = await prepareMix(store, targets, notes);
    const oneCall = await runWorkload(
      { name: 'one call', targets, requests: (target) => [target.request(ONE_CALL)] },
      store,
      options,
    );
    const distinct =
      mix === undefined
        ? undefined
        : await runWorkload(
            { name: 'mix', targets: mix.targets, requests: (target) => mix.mix.map((page) => target.request(page)) },
            store,
            options,
          );
    const memory = await memoryPhase(targets, { tool: TOOL, dir: scratch });
    const loadAtEnd = loadAverage();
    print({ startedAt, loadAtStart, loadAtEnd, notes, oneCall, memory, mix, distinct });
  } finally {
    await stopAll();
    removeScratch();
  }
}

/** The folder holding configs, logs and the wrk script; removed however the bench ends. */
let scratchDir: string | undefined;
function removeScratch(): void {
  if (scratchDir !== undefined) rmSync(scratchDir, { recursive: true, force: true });
  scratchDir = undefined;
}

interface Report {
  readonly startedAt: Date;
  readonly loadAtStart: string;
  readonly loadAtEnd: string;
  readonly notes: readonly string[];
  readonly oneCall: readonly Row[];
  readonly memory: ReadonlyMap<Target, { idle: number; peak: number }>;
  readonly mix: { mix: PageQuery[]; meanSize: number } | undefined;
  readonly distinct: readonly Row[] | undefined;
}

function print(report: Report): void {
  const tool = TOOL === 'wrk' ? `${wrkVersion()}, one thread, closed loop` : 'autocannon 9, closed loop';
  const out: string[] = [
    `Command: \`${commandLine(TOOL)}\` (${report.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
    '',
    `Machine: ${machine()}. Load average (1 / 5 / 15 min): ${report.loadAtStart} at start, ${report.loadAtEnd} at end; other work on the machine skews results.`,
    '',
    `Load: ${tool}, ${CONNECTIONS} connections; per target ${WARMUP_S} s warm-up, then ${ROUNDS} × ${DURATION_S} s runs interleaved across targets, medians. Servers under test pinned to core ${SERVER_CORE}; the store, the load tool and the bench on core ${LOAD_CORE}. "server CPU" is the process answering (REST direct: the store); "upstream calls/request" is what the store served during the runs over what the target answered (requests still in flight when a run stops count upstream only, so a target without sharing shows a little over 1).`,
    '',
    `**One call**: the same page of 20 pets every time (\`GET /v1/pets?limit=20\`; this gateway \`{ pets(first: 20) { nodes { id name status } } }\`; Tailcall \`{ pets(limit: 20) { id name status } }\`; Mesh \`{ listPets(limit: 20) { ... on Pet { id name status } } }\`); memory while ${RSS_CONNECTIONS} connections send it for ${RSS_SECONDS} s:`,
    '',
    table(
      [
        'target',
        'req/s',
        'p50 ms',
        'p99 ms',
        'server CPU ms/request',
        'server CPU busy',
        'upstream calls/request',
        'RSS idle MB',
        `peak RSS at ${RSS_CONNECTIONS} connections MB`,
        'errors',
      ],
      report.oneCall.map((row) => {
        const memory = report.memory.get(row.target);
        return [...cells(row), fixed(memory?.idle ?? 0, 0), fixed(memory?.peak ?? 0, 0), String(row.errors)];
      }),
    ),
  ];
  if (report.mix !== undefined && report.distinct !== undefined) {
    out.push(
      '',
      `**Distinct mix** (${integer(report.mix.mix.length)} different pages in turn: sizes 1–100, no filter or one of three statuses, first pages and cursors; ${fixed(report.mix.meanSize, 1)} pets per page on average):`,
      '',
      table(
        [
          'target',
          'req/s',
          'p50 ms',
          'p99 ms',
          'server CPU ms/request',
          'server CPU busy',
          'upstream calls/request',
          'errors',
        ],
        report.distinct.map((row) => [...cells(row), String(row.errors)]),
      ),
    );
  }
  const ratios = ratioLines(report);
  if (ratios.length > 0) out.push('', ...ratios);
  if (report.notes.length > 0) out.push('', ...report.notes.map((note) => `- ${note}`));
  process.stdout.write(`\n${out.join('\n')}\n`);
}

function cells(row: Row): string[] {
  return [
    row.target.name,
    integer(row.rps),
    fixed(row.p50, 2),
    fixed(row.p99, 2),
    fixed(row.cpuMsPerRequest, 3),
    percent(row.busy),
    fixed(row.upstreamPerRequest, 2),
  ];
}

/** The gateway's req/s against Tailcall's, like for like, and its tail and memory. */
function ratioLines(report: Report): string[] {
  const rps = (rows: readonly Row[] | undefined, name: string): number | undefined =>
    rows?.find((row) => row.target.name === name)?.rps;
  const share = (rows: readonly Row[] | undefined, ours: string, theirs: string): string => {
    const a = rps(rows, ours);
    const b = rps(rows, theirs);
    return a === undefined || b === undefined ? 'n/a' : percent(a / b);
  };
  const lines: string[] = [];
  if (rps(report.oneCall, ROW.tailcall) !== undefined) {
    lines.push(
      `- this gateway's req/s as a share of Tailcall's, sharing off on both sides: one call ${share(report.oneCall, ROW.gatewayOff, ROW.tailcall)}, distinct mix ${share(report.distinct, ROW.gatewayOff, ROW.tailcall)}`,
      `- sharing on on both sides (coalescing, \`dedupe: true\`): one call ${share(report.oneCall, ROW.gateway, ROW.tailcallDedupe)}, distinct mix ${share(report.distinct, ROW.gateway, ROW.tailcallDedupe)}`,
    );
  }
  for (const name of [ROW.gateway, ROW.gatewayOff]) {
    const row = report.oneCall.find((candidate) => candidate.target.name === name);
    if (row !== undefined) {
      const memory = report.memory.get(row.target);
      lines.push(
        `- ${name}: p99 / p50 ${fixed(row.p99 / row.p50, 1)}× at ${CONNECTIONS} connections; peak RSS ${fixed(memory?.peak ?? 0, 0)} MB at ${RSS_CONNECTIONS}`,
      );
    }
  }
  return lines;
}

process.on('exit', () => {
  signalAll();
  removeScratch();
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

await main();
