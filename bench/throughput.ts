/**
 * `npm run bench:throughput`: this gateway side by side with REST direct, Tailcall and GraphQL Mesh,
 * all in one run on a 2-core machine, printed as Markdown the README can quote verbatim.
 *
 * Rows: REST direct on the reference store; Tailcall 1.0.0 with `dedupe` and without; this gateway
 * with coalescing on (the default) and off (`PETSTORE_COALESCE=false`); the Node floor and the Apollo
 * floor (bench/lib/floor.ts: what any Node gateway, and any Apollo Server one, pays per request, on
 * both workloads); the Node floor sharing one GET among identical requests in flight (one call only:
 * the least tail a Node server that shares has); Mesh v1 + Hive Gateway. A peer
 * that is not installed (bench/tailcall, bench/mesh) is skipped with a one-line note.
 *
 * Workloads:
 *   one call      the same page of 20 pets on every request, `{ pets(first: 20) { nodes { id name
 *                 status } } }` or its equivalent: what sharing identical requests in flight can flatter
 *   distinct mix  ~1,400 different pages (sizes 1–100, status filters, cursors) in turn (bench/lib/mix.ts),
 *                 GraphQL with variables: every request is its own upstream call; on every target that
 *                 answers every page as the store does
 * and a memory phase: peak resident set while 200 connections send the one-call request.
 *
 * Every server is its own process: the one under test pinned to core 1 (`taskset -c 1`), the
 * reference store, the load tool and this script on core 0. The store's key has limits no run
 * reaches and the gateway runs with PETSTORE_RATE_LIMITS=off, so all measure plumbing, not rate
 * limiting. Load: wrk (closed loop, one thread) when installed, else autocannon (one call only).
 * Each target gets a warm-up, then BENCH_ROUNDS measured runs interleaved across targets; the
 * tables show medians. Progress goes to stderr, the report to stdout.
 *
 * Settings: BENCH_TOOL (wrk | autocannon), BENCH_CONNECTIONS (32), BENCH_WARMUP (5 s), BENCH_REWARM
 * (2 s of unmeasured load right before each measured run; 0 for none),
 * BENCH_DURATION (10 s), BENCH_ROUNDS (3), BENCH_WIRE (false; true: tcpdump captures each
 * measured run, and the one-call table and the tail lines also give p50 and p99 on the wire, as the
 * server delivers them: bench/lib/wire.ts).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseTool, positive } from './lib/load.js';
import { checkMix, meanPageSize, walkMix } from './lib/mix.js';
import { meshSkipped, startMesh, startTailcall, tailcallVersion } from './lib/peers.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, signalAll, stopAll } from './lib/processes.js';
import { formatReport, loadAverage, ROW } from './lib/report.js';
import { memoryPhase, ONE_CALL, runWorkload, type Settings, waitUntilServing } from './lib/runs.js';
import { BENCH_KEY, type Served, startFloorServer, startGateway, startStore, storeCounts } from './lib/servers.js';
import {
  gatewayTarget,
  meshTarget,
  type PageQuery,
  restTarget,
  send,
  type Target,
  tailcallTarget,
} from './lib/targets.js';

const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const WARMUP_S = positive('BENCH_WARMUP', 5);
const REWARM_S = positive('BENCH_REWARM', 2, 0);
const DURATION_S = positive('BENCH_DURATION', 10);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const TOOL = chooseTool(process.env.BENCH_TOOL);
const WIRE = process.env.BENCH_WIRE === 'true';
const RSS_CONNECTIONS = 200;
const RSS_SECONDS = 5;

const began = performance.now();
/** A progress line on stderr, with the seconds since the bench began. */
const progress = (line: string): void =>
  void process.stderr.write(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

/** The store, then every target in row order; a peer that is not installed becomes a note. */
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
  const floor = await startFloorServer(SERVER_CORE, store.url);
  targets.push(gatewayTarget(ROW.floor, floor.url, floor.pid, 'id'));
  const sharingFloor = await startFloorServer(SERVER_CORE, store.url, 'sharing-floor');
  targets.push(gatewayTarget(ROW.sharingFloor, sharingFloor.url, sharingFloor.pid, 'id'));
  const apolloFloor = await startFloorServer(SERVER_CORE, store.url, 'apollo');
  targets.push(gatewayTarget(ROW.apolloFloor, apolloFloor.url, apolloFloor.pid, 'id'));
  const mesh = meshSkipped();
  if (mesh !== undefined) notes.push(mesh);
  else {
    const peer = await startMesh(SERVER_CORE, store.url, BENCH_KEY, scratch);
    targets.push(meshTarget(ROW.mesh, peer.url, peer.pid, peer.log));
  }
  return { store, targets };
}

/** The mix, and the targets that answer every page of it as the store does. */
async function prepareMix(
  store: Served,
  targets: readonly Target[],
  notes: string[],
): Promise<{ pages: PageQuery[]; targets: Target[]; meanSize: number } | undefined> {
  if (TOOL !== 'wrk') {
    notes.push('Distinct mix: skipped, it needs wrk (apt-get install -y wrk); autocannon here sends one request.');
    return undefined;
  }
  const rest = targets[0] as Target;
  progress('mix: walking every page through a gateway started for the walk');
  const pages = await walkMix(SERVER_CORE, store.url);
  const expected: string[][] = [];
  for (const page of pages) {
    const { body } = await send(rest, rest.request(page));
    expected.push(rest.ids(body) ?? []);
  }
  const able: Target[] = [];
  // On the mix no two requests in flight are alike, so the sharing floor would repeat the Node floor's row.
  for (const target of targets.filter((each) => each.name !== ROW.sharingFloor)) {
    progress(`mix: checking ${target.name} on ${pages.length} pages`);
    const check = await checkMix(target, pages, expected);
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
  return { pages, targets: able, meanSize: meanPageSize(expected) };
}

function commandLine(): string {
  const settings = `BENCH_TOOL=${TOOL} BENCH_CONNECTIONS=${CONNECTIONS} BENCH_WARMUP=${WARMUP_S} BENCH_REWARM=${REWARM_S} BENCH_DURATION=${DURATION_S} BENCH_ROUNDS=${ROUNDS}${WIRE ? ' BENCH_WIRE=true' : ''}`;
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
    const settings: Settings = {
      tool: TOOL,
      connections: CONNECTIONS,
      dir: scratch,
      wire: WIRE,
      warmupS: WARMUP_S,
      rewarmS: REWARM_S,
      durationS: DURATION_S,
      rounds: ROUNDS,
      progress,
    };
    const mix = await prepareMix(store, targets, notes);
    const oneCall = await runWorkload(
      { name: 'one call', targets, requests: (target) => [target.request(ONE_CALL)] },
      store,
      settings,
    );
    const mixRows =
      mix &&
      (await runWorkload(
        {
          name: 'mix',
          targets: mix.targets,
          requests: (target) => mix.pages.map((page) => target.request(page, 'variables')),
        },
        store,
        settings,
      ));
    const memory = await memoryPhase(targets, RSS_CONNECTIONS, RSS_SECONDS, settings);
    const report = formatReport({
      command: commandLine(),
      tool: TOOL,
      connections: CONNECTIONS,
      warmupS: WARMUP_S,
      rewarmS: REWARM_S,
      durationS: DURATION_S,
      rounds: ROUNDS,
      cores: { server: SERVER_CORE, load: LOAD_CORE },
      startedAt,
      loadAtStart,
      loadAtEnd: loadAverage(),
      oneCall,
      memory: { connections: RSS_CONNECTIONS, seconds: RSS_SECONDS, of: memory },
      mix: mix && mixRows && { pages: mix.pages.length, meanSize: mix.meanSize, rows: mixRows },
      notes,
    });
    process.stdout.write(`\n${report}\n`);
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

process.on('exit', () => {
  signalAll();
  removeScratch();
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

await main();
