/**
 * `npm run bench:compare -- A B [C …]`: builds of the gateway side by side, as the README's "What
 * each change to the hot path moved" measures them. Each argument is the folder of a build's
 * `main.js` (`dist` for this checkout; for another commit, `npm ci && npm run build` in a worktree of
 * it and its `dist`), or a floor of bench/lib/floor.ts: `apollo` (the Apollo floor), `floor` (the
 * Node floor), `sharing-floor` and `constant-floor` (the Node floor sharing one GET among identical
 * requests in flight, and answering from memory: what bounds the tail with sharing; the latter
 * answers the one-call page whatever is asked). One store serves all; each round runs every
 * build in turn, started fresh as `npm start` runs it, warmed up, then loaded with the one-call
 * query; the medians over the rounds come last. Builds alternate, each round starting one further
 * along, so a machine that gets busier or quieter during the run weighs on all of them alike.
 *
 * An argument may carry Node flags after the folder or floor, as one quoted argument (`"dist
 * --max-old-space-size=1024"`): for a build they come after `npm start`'s --max-old-space-size=256,
 * so they override it. Each row also gives the server's peak resident set (VmHWM) over its warm-up
 * and run, and p99 / p50 as the median of each round's own ratio (not the ratio of the two medians).
 *
 * Settings: BENCH_ROUNDS (6), BENCH_DURATION (5 s), BENCH_WARMUP (3 s), BENCH_CONNECTIONS (32),
 * BENCH_COALESCE (false: sharing off; true: coalescing on, the default of the gateway; both: each
 * build twice, a row for each, to see what sharing costs where nothing is shared),
 * BENCH_WORKLOAD (one-call; mix: the distinct mix of `bench:throughput`, walked once through a
 * gateway of its own before the rounds; new-keys: the one-call query with a new API key the store
 * refuses every time, as a client spraying keys; both need wrk), BENCH_PROCESSES (fresh: each run
 * on a process started for it; kept: each build's process started once and loaded in every round,
 * as the full bench does, since how long a process has run moves its tail), BENCH_PAUSE (0 s: quiet
 * before each round after the first, with BENCH_PROCESSES=kept, so that every build has waited
 * that long plus the others' runs, as each target of the full bench waits over a minute between its
 * runs; what a process does after a quiet minute moves its next seconds' tail), BENCH_WIRE (false;
 * true: tcpdump captures each measured run on loopback, and each row also gives p50, p99 and
 * p99 / p50 on the wire, as the server delivers them, without the load tool's own queue:
 * bench/lib/wire.ts).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FLOOR_KINDS, isFloorKind } from './lib/floor.js';
import { chooseTool, load, type Measurement, measure, positive } from './lib/load.js';
import { loadWorkload, requestsOf, workloadOf } from './lib/mix.js';
import { LOAD_CORE, pinSelf, rssMb, SERVER_CORE, signalAll, stop, stopAll } from './lib/processes.js';
import { median } from './lib/report.js';
import { type Served, startFloorServer, startGateway, startStore } from './lib/servers.js';
import { gatewayTarget } from './lib/targets.js';

const builds = process.argv.slice(2);
if (builds.length < (process.env.BENCH_COALESCE === 'both' ? 1 : 2)) {
  console.error(`usage: npm run bench:compare -- <build folder | ${FLOOR_KINDS.join(' | ')}> <…> [...]`);
  console.error('       BENCH_COALESCE=both npm run bench:compare -- <build folder> [...]');
  process.exit(2);
}
const ROUNDS = positive('BENCH_ROUNDS', 6);
const DURATION_S = positive('BENCH_DURATION', 5);
const WARMUP_S = positive('BENCH_WARMUP', 3);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const COALESCE =
  process.env.BENCH_COALESCE === 'true' || process.env.BENCH_COALESCE === 'both' ? process.env.BENCH_COALESCE : 'false';
const PROCESSES = process.env.BENCH_PROCESSES ?? 'fresh';
if (PROCESSES !== 'fresh' && PROCESSES !== 'kept') {
  console.error('BENCH_PROCESSES: fresh or kept');
  process.exit(2);
}
const PAUSE_S = Number(process.env.BENCH_PAUSE ?? 0);
if (!Number.isFinite(PAUSE_S) || PAUSE_S < 0 || (PAUSE_S > 0 && PROCESSES !== 'kept')) {
  console.error('BENCH_PAUSE: seconds of quiet before each round, 0 or more, with BENCH_PROCESSES=kept');
  process.exit(2);
}
const WIRE = process.env.BENCH_WIRE === 'true';
const TOOL = chooseTool(process.env.BENCH_TOOL);
const WORKLOAD = workloadOf(TOOL);

/**
 * What each row runs: a build, Node's flags for it (after `npm start`'s --max-old-space-size=256,
 * so they override it), and the gateway's PETSTORE_COALESCE (the floor has neither).
 */
interface Entry {
  readonly label: string;
  readonly build: string;
  readonly flags: readonly string[];
  readonly coalesce: string;
}
const entries: Entry[] = builds.flatMap((argument) => {
  const [build = '', ...flags] = argument.trim().split(/\s+/);
  const modes = isFloorKind(build) || COALESCE !== 'both' ? [COALESCE] : ['true', 'false'];
  return modes.map((coalesce) => ({
    label: modes.length > 1 ? `${argument}, coalescing ${coalesce === 'true' ? 'on' : 'off'}` : argument,
    build,
    flags,
    coalesce,
  }));
});
if (WORKLOAD !== 'one-call' && entries.some((entry) => entry.build === 'constant-floor')) {
  console.error(`constant-floor answers the one-call page to everything: not a row for BENCH_WORKLOAD=${WORKLOAD}`);
  process.exit(2);
}

pinSelf(LOAD_CORE);
process.once('SIGINT', () => {
  signalAll();
  process.exit(130);
});
const dir = mkdtempSync(join(tmpdir(), 'petstore-compare-'));
/** A run, with the server's peak resident set over its life (warm-up and run). */
type Run = Measurement & { readonly peakRssMb: number };
const runs = new Map<string, Run[]>(entries.map((entry) => [entry.label, []]));
/**
 * With BENCH_PROCESSES=kept, each build's process by label, from its first round on; stopped after
 * the rounds (by stopAll if the run fails).
 */
const kept = new Map<string, Served>();
try {
  const store = await startStore(LOAD_CORE);
  const workload = await loadWorkload(WORKLOAD, SERVER_CORE, store.url);
  const start = ({ build, flags, coalesce }: Omit<Entry, 'label'>): Promise<Served> =>
    isFloorKind(build)
      ? startFloorServer(SERVER_CORE, store.url, build, flags)
      : startGateway(SERVER_CORE, store.url, { PETSTORE_COALESCE: coalesce }, flags, join(build, 'main.js'));
  for (let round = 1; round <= ROUNDS; round++) {
    if (round > 1 && PAUSE_S > 0) {
      console.error(`round ${round}: ${PAUSE_S} s of quiet`);
      await sleep(PAUSE_S * 1000);
    }
    // Each round starts one build further along, so no build always runs first or after the same one.
    const order = [...entries.slice((round - 1) % entries.length), ...entries.slice(0, (round - 1) % entries.length)];
    for (const { label, build, flags, coalesce } of order) {
      const served = kept.get(label) ?? (await start({ build, flags, coalesce }));
      if (PROCESSES === 'kept') kept.set(label, served);
      const target = gatewayTarget(label, served.url, served.pid, isFloorKind(build) ? 'id' : 'cursor');
      const requests = requestsOf(workload, target);
      const options = { tool: TOOL, connections: CONNECTIONS, dir, wire: WIRE };
      await load(target, requests, { ...options, seconds: WARMUP_S });
      const run = {
        ...(await measure(target, requests, { ...options, seconds: DURATION_S })),
        peakRssMb: rssMb(served.pid, 'peak'),
      };
      if (PROCESSES === 'fresh') await stop(served.child);
      runs.get(label)?.push(run);
      const tail = `p99 / p50 ${(run.p99Ms / run.p50Ms).toFixed(1)}×${run.wire ? `, on the wire ${(run.wire.p99Ms / run.wire.p50Ms).toFixed(1)}×` : ''}`;
      console.error(`round ${round}: ${label}: ${run.rps.toFixed(0)} req/s, ${tail}, errors ${run.errors}`);
    }
  }
  for (const served of kept.values()) await stop(served.child);
  await stop(store.child);
  console.log(
    `Command: \`${workload.setting}${PROCESSES === 'kept' ? 'BENCH_PROCESSES=kept ' : ''}${PAUSE_S > 0 ? `BENCH_PAUSE=${PAUSE_S} ` : ''}${WIRE ? 'BENCH_WIRE=true ' : ''}BENCH_COALESCE=${COALESCE} BENCH_ROUNDS=${ROUNDS} BENCH_DURATION=${DURATION_S} npm run bench:compare -- ${builds.join(' ')}\` (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC), ${workload.description}, ${TOOL}, ${CONNECTIONS} connections, medians of ${ROUNDS} alternating rounds\n`,
  );
  const wireColumns = WIRE ? ' wire p50 ms | wire p99 ms | wire p99 / p50 | each round, wire p99 / p50 |' : '';
  console.log(
    `| build | req/s | CPU ms/request | p50 ms | p99 ms | p99 / p50 | peak RSS MB | each round, req/s | each round, p99 / p50 |${wireColumns} errors |`,
  );
  console.log(`|---|---:|---:|---:|---:|---:|---:|---|---|${WIRE ? '---:|---:|---:|---|' : ''}---:|`);
  for (const [build, measured] of runs) {
    const rounds = measured.map((run) => run.rps.toFixed(0)).join(', ');
    const tails = measured.map((run) => `${(run.p99Ms / run.p50Ms).toFixed(1)}×`).join(', ');
    const cpu = median(measured.map((run) => (run.cpuS * 1000) / Math.max(1, run.requests)));
    const errors = measured.reduce((sum, run) => sum + run.errors, 0);
    const wires = measured.flatMap((run) => (run.wire ? [run.wire] : []));
    const wire = WIRE
      ? ` ${median(wires.map((w) => w.p50Ms)).toFixed(2)} | ${median(wires.map((w) => w.p99Ms)).toFixed(2)} | ${median(wires.map((w) => w.p99Ms / w.p50Ms)).toFixed(1)}× | ${wires.map((w) => `${(w.p99Ms / w.p50Ms).toFixed(1)}×`).join(', ')} |`
      : '';
    console.log(
      `| ${build} | ${median(measured.map((run) => run.rps)).toFixed(0)} | ${cpu.toFixed(3)} | ${median(measured.map((run) => run.p50Ms)).toFixed(2)} | ${median(measured.map((run) => run.p99Ms)).toFixed(2)} | ${median(measured.map((run) => run.p99Ms / run.p50Ms)).toFixed(1)}× | ${median(measured.map((run) => run.peakRssMb)).toFixed(0)} | ${rounds} | ${tails} |${wire} ${errors} |`,
    );
  }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
