/**
 * `npm run bench:profile`: where the gateway's CPU goes on the one-call query, sharing off and on.
 * The gateway runs as `npm start` runs it (dist/main.js) pinned to core 1 under V8's sampling
 * profiler (`--cpu-prof`), wrk loads it with 32 connections from core 0 for BENCH_DURATION seconds
 * (default 10), and the profile's samples are summed by who owns the code that was running: Node's
 * own JavaScript (`node:` modules: HTTP, streams, timers), each npm package, the gateway's own
 * code, the garbage collector, V8 itself ("program") and idle. Self time, so the rows add up to 100%.
 * BENCH_PROFILE_DIR=folder keeps the profiles for Chrome DevTools. BENCH_WORKLOAD=mix profiles the
 * distinct mix of `bench:throughput` instead (it needs wrk), where nothing is shared.
 *
 * This is the evidence for how far a Node gateway on Apollo Server can go: what the gateway's own
 * code costs next to what any server built on these parts pays.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallFrame, owner, where } from './lib/frames.js';
import { chooseTool, load } from './lib/load.js';
import { loadWorkload, type Workload, wantsMix } from './lib/mix.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, signalAll, stopAll } from './lib/processes.js';
import { startGateway, startStore } from './lib/servers.js';
import { gatewayTarget } from './lib/targets.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const SECONDS = Number(process.env.BENCH_DURATION ?? 10);

/** Self time by owner, and by function (the heaviest first), as shares of all samples. */
function summarise(file: string): { owners: Array<[string, number]>; functions: Array<[string, number]> } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const delta = profile.timeDeltas[i] ?? 0;
    if (node === undefined) return;
    owners.set(owner(node.callFrame), (owners.get(owner(node.callFrame)) ?? 0) + delta);
    if (node.callFrame.url !== '')
      functions.set(where(node.callFrame), (functions.get(where(node.callFrame)) ?? 0) + delta);
    all += delta;
  });
  const shares = (totals: Map<string, number>) =>
    [...totals.entries()].map(([name, us]) => [name, us / all] as [string, number]).sort((a, b) => b[1] - a[1]);
  return { owners: shares(owners), functions: shares(functions).slice(0, 12) };
}

/** BENCH_PROFILE_DIR keeps the .cpuprofile files there (Chrome DevTools opens them); else they are removed. */
const KEEP = process.env.BENCH_PROFILE_DIR || undefined;

async function profileOnce(label: string, storeUrl: string, settings: Record<string, string>, workload: Workload) {
  if (KEEP !== undefined) mkdirSync(KEEP, { recursive: true });
  const dir = mkdtempSync(join(KEEP ?? tmpdir(), 'petstore-profile-'));
  try {
    const gateway = await startGateway(SERVER_CORE, storeUrl, settings, [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      '--cpu-prof-interval=250',
    ]);
    const target = gatewayTarget(label, gateway.url, gateway.pid);
    const requests = workload.pages.map((page) => target.request(page, workload.form));
    // A short warm-up, so the profile is of the steady state rather than of V8 compiling.
    await load(target, requests, { tool: TOOL, seconds: 2, connections: 32, dir });
    const result = await load(target, requests, { tool: TOOL, seconds: SECONDS, connections: 32, dir });
    const exited = new Promise((resolve) => gateway.child.once('exit', resolve));
    gateway.child.kill('SIGTERM');
    await exited;
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`no profile was written for ${label}`);
    return { result, shares: summarise(join(dir, file)) };
  } finally {
    if (KEEP === undefined) rmSync(dir, { recursive: true, force: true });
    else console.error(`bench:profile: ${label}: ${dir}`);
  }
}

const TOOL = chooseTool(process.env.BENCH_TOOL);
const MIX = wantsMix(TOOL);
pinSelf(LOAD_CORE);
process.once('SIGINT', () => {
  signalAll();
  process.exit(130);
});
try {
  const store = await startStore(LOAD_CORE);
  const workload = await loadWorkload(MIX, SERVER_CORE, store.url);
  const rows: Array<[string, Awaited<ReturnType<typeof profileOnce>>]> = [];
  for (const [label, settings] of [
    ['`PETSTORE_COALESCE=false`', { PETSTORE_COALESCE: 'false' }],
    ['coalescing on (default)', {}],
  ] as const) {
    rows.push([label, await profileOnce(label, store.url, settings, workload)]);
  }
  console.log(
    `Command: \`${workload.setting}npm run bench:profile\` (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC), ` +
      `${workload.description}, ` +
      `wrk 1 thread, 32 connections, ${SECONDS} s after a 2 s warm-up; gateway on core ${SERVER_CORE} under --cpu-prof.\n`,
  );
  for (const [label, { result, shares }] of rows) {
    console.log(
      `**This gateway, ${label}**: ${Math.round(result.rps).toLocaleString('en')} req/s under the profiler\n`,
    );
    console.log('| who runs | share of the gateway process |\n|---|---:|');
    for (const [name, share] of shares.owners) {
      if (share >= 0.005) console.log(`| ${name} | ${(share * 100).toFixed(1)}% |`);
    }
    console.log('\n| heaviest functions (self time) | share |\n|---|---:|');
    for (const [name, share] of shares.functions) console.log(`| \`${name}\` | ${(share * 100).toFixed(1)}% |`);
    console.log('');
  }
} finally {
  await stopAll();
}
