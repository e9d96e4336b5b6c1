/**
 * `npm run bench:profile`: where the gateway's CPU goes on the one-call query, sharing off and on,
 * and next to it the Apollo floor's (bench/lib/floor.ts: Apollo Server and graphql-js with one
 * resolver, nothing of the gateway's) under the same load. Each server runs pinned to core 1 under
 * V8's sampling profiler (`--cpu-prof`; the gateway as `npm start` runs it, dist/main.js), wrk loads
 * it with 32 connections from core 0 for BENCH_DURATION seconds (default 10), and the profile's
 * samples are summed by who owns the code that was running: Node's own JavaScript (`node:` modules:
 * HTTP, streams, timers), each npm package, the gateway's own code, the garbage collector, V8 itself
 * ("program") and idle. Self time, so the shares add up to 100%. The last table turns the samples
 * taken during the measured run into CPU microseconds per request answered, by owner, for the
 * gateway without sharing and for the Apollo floor: what the gateway spends above the floor, and
 * where. BENCH_PROFILE_DIR=folder keeps the profiles for Chrome DevTools. BENCH_WORKLOAD=mix
 * profiles the distinct mix of `bench:throughput` instead (it needs wrk), where nothing is shared;
 * BENCH_WORKLOAD=new-keys a client sending a new API key, which the store refuses, every time.
 *
 * This is the evidence for how far a Node gateway on Apollo Server can go: what the gateway's own
 * code costs next to what any server built on these parts pays.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallFrame, IDLE, owner, where } from './lib/frames.js';
import { chooseTool, type LoadResult, load } from './lib/load.js';
import { loadWorkload, requestsOf, type Workload, workloadOf } from './lib/mix.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, signalAll, stopAll } from './lib/processes.js';
import { type Served, startFloorServer, startGateway, startStore } from './lib/servers.js';
import { gatewayTarget } from './lib/targets.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  /** Microseconds on the machine's monotonic clock, as `process.hrtime` reads it. */
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

interface Summary {
  /** Self time by owner and by function (the heaviest first), as shares of all samples. */
  readonly owners: Array<[string, number]>;
  readonly functions: Array<[string, number]>;
  /** Microseconds of samples by owner, idle left out, taken between `from` and `to` only. */
  readonly during: Map<string, number>;
}

const SECONDS = Number(process.env.BENCH_DURATION ?? 10);

/** The monotonic clock in microseconds, the clock of a V8 profile's timestamps. */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

function summarise(file: string, from: number, to: number): Summary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  const during = new Map<string, number>();
  const add = (totals: Map<string, number>, name: string, us: number) => totals.set(name, (totals.get(name) ?? 0) + us);
  let all = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (node === undefined) return;
    const who = owner(node.callFrame);
    add(owners, who, delta);
    if (node.callFrame.url !== '') add(functions, where(node.callFrame), delta);
    if (at >= from && at <= to && who !== IDLE) add(during, who, delta);
    all += delta;
  });
  const shares = (totals: Map<string, number>) =>
    [...totals.entries()].map(([name, us]) => [name, us / all] as [string, number]).sort((a, b) => b[1] - a[1]);
  return { owners: shares(owners), functions: shares(functions).slice(0, 12), during };
}

/** BENCH_PROFILE_DIR keeps the .cpuprofile files there (Chrome DevTools opens them); else they are removed. */
const KEEP = process.env.BENCH_PROFILE_DIR || undefined;

interface Subject {
  readonly label: string;
  readonly start: (nodeArgs: readonly string[]) => Promise<Served>;
  /** How the server takes `after`: the gateway's sealed cursor, or the store's pet id (the floors). */
  readonly after: 'cursor' | 'id';
}

interface Profiled {
  readonly result: LoadResult;
  readonly shares: Summary;
}

async function profileOnce(subject: Subject, workload: Workload): Promise<Profiled> {
  if (KEEP !== undefined) mkdirSync(KEEP, { recursive: true });
  const dir = mkdtempSync(join(KEEP ?? tmpdir(), 'petstore-profile-'));
  try {
    const served = await subject.start(['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=250']);
    const target = gatewayTarget(subject.label, served.url, served.pid, subject.after);
    const requests = requestsOf(workload, target);
    // A short warm-up, so the profile is of the steady state rather than of V8 compiling.
    await load(target, requests, { tool: TOOL, seconds: 2, connections: 32, dir });
    const from = nowUs();
    const result = await load(target, requests, { tool: TOOL, seconds: SECONDS, connections: 32, dir });
    const to = nowUs();
    const exited = new Promise((resolve) => served.child.once('exit', resolve));
    served.child.kill('SIGTERM');
    await exited;
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`no profile was written for ${subject.label}`);
    const shares = summarise(join(dir, file), from, to);
    if (shares.during.size === 0) throw new Error(`no sample of ${subject.label}'s profile falls in its measured run`);
    return { result, shares };
  } finally {
    if (KEEP === undefined) rmSync(dir, { recursive: true, force: true });
    else console.error(`bench:profile: ${subject.label}: ${dir}`);
  }
}

/** CPU microseconds per request answered, by owner, in the measured run (idle left out). */
function perRequest({ result, shares }: Profiled): Map<string, number> {
  return new Map([...shares.during].map(([name, us]) => [name, us / result.requests]));
}

const us = (value: number): string => value.toFixed(1);

const TOOL = chooseTool(process.env.BENCH_TOOL);
const WORKLOAD = workloadOf(TOOL);
pinSelf(LOAD_CORE);
process.once('SIGINT', () => {
  signalAll();
  process.exit(130);
});
try {
  const store = await startStore(LOAD_CORE);
  const workload = await loadWorkload(WORKLOAD, SERVER_CORE, store.url);
  const gateway = (label: string, settings: Record<string, string>): Subject => ({
    label: `This gateway, ${label}`,
    start: (nodeArgs) => startGateway(SERVER_CORE, store.url, settings, nodeArgs),
    after: 'cursor',
  });
  const subjects = [
    gateway('`PETSTORE_COALESCE=false`', { PETSTORE_COALESCE: 'false' }),
    gateway('coalescing on (default)', {}),
    {
      label: 'The Apollo floor (bench/lib/floor.ts)',
      start: (nodeArgs: readonly string[]) => startFloorServer(SERVER_CORE, store.url, 'apollo', nodeArgs),
      after: 'id',
    } satisfies Subject,
  ];
  const rows: Array<[Subject, Profiled]> = [];
  for (const subject of subjects) rows.push([subject, await profileOnce(subject, workload)]);
  console.log(
    `Command: \`${workload.setting}npm run bench:profile\` (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC), ` +
      `${workload.description}, ` +
      `wrk 1 thread, 32 connections, ${SECONDS} s after a 2 s warm-up; each server on core ${SERVER_CORE} under --cpu-prof.\n`,
  );
  for (const [subject, { result, shares }] of rows) {
    console.log(`**${subject.label}**: ${Math.round(result.rps).toLocaleString('en')} req/s under the profiler\n`);
    console.log('| who runs | share of the process |\n|---|---:|');
    for (const [name, share] of shares.owners) {
      if (share >= 0.005) console.log(`| ${name} | ${(share * 100).toFixed(1)}% |`);
    }
    console.log('\n| heaviest functions (self time) | share |\n|---|---:|');
    for (const [name, share] of shares.functions) console.log(`| \`${name}\` | ${(share * 100).toFixed(1)}% |`);
    console.log('');
  }
  const [off, , floor] = rows;
  if (off !== undefined && floor !== undefined) {
    const mine = perRequest(off[1]);
    const theirs = perRequest(floor[1]);
    const total = (values: Map<string, number>) => [...values.values()].reduce((sum, value) => sum + value, 0);
    const names = [...new Set([...mine.keys(), ...theirs.keys()])].sort(
      (a, b) => (mine.get(b) ?? 0) - (theirs.get(b) ?? 0) - ((mine.get(a) ?? 0) - (theirs.get(a) ?? 0)),
    );
    console.log(
      '**CPU per request, sharing off, next to the Apollo floor**: the samples of the measured run (idle left out) ' +
        'over the requests answered in it, in microseconds; under the profiler, which slows the gateway (more functions) more than the floor.\n',
    );
    console.log('| who runs | this gateway µs | Apollo floor µs | gateway − floor µs |\n|---|---:|---:|---:|');
    for (const name of names) {
      const a = mine.get(name) ?? 0;
      const b = theirs.get(name) ?? 0;
      if (Math.max(a, b) >= 0.5)
        console.log(`| ${name} | ${us(a)} | ${us(b)} | ${a - b >= 0 ? '+' : ''}${us(a - b)} |`);
    }
    const [a, b] = [total(mine), total(theirs)];
    console.log(`| **all** | **${us(a)}** | **${us(b)}** | **+${us(a - b)}** |\n`);
  }
} finally {
  await stopAll();
}
