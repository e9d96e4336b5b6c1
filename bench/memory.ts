/**
 * `npm run bench:memory`: the gateway's resident set on Node 20 and Node 24, with and without the
 * young-generation cap `npm start` sets, side by side with the throughput each costs.
 *
 * For each Node (this one, and Node 24 from the folder `.ci/node24` prints, or BENCH_NODE24) and each
 * NODE_OPTIONS of BENCH_MEMORY_OPTIONS (`|`-separated; default: none, and two semi-space caps), the
 * built gateway runs as `npm start` runs it (`--max-old-space-size=256`), pinned to core 1, the store
 * in this process on core 0. wrk sends the one-call query from 200 connections: a 5 s warm-up, then
 * BENCH_ROUNDS (3) runs of BENCH_DURATION (10) s interleaved across the settings (medians of req/s
 * and p99, the highest RSS sampled every 100 ms). Last, 5,000 requests each with an API key never
 * seen before, which the store refuses (401): the RSS 2 s after.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, requireWrk, setting } from './lib/load.js';
import { LOAD_CORE, peakRss, pinSelf, rssMb, SERVER_CORE, stop, stopAll } from './lib/processes.js';
import { startGateway, startStore } from './lib/servers.js';
import { gatewayTarget, ONE_CALL } from './lib/targets.js';
import { median, table } from './lib/text.js';

const [DURATION_S, ROUNDS] = [setting('BENCH_DURATION', 10), setting('BENCH_ROUNDS', 3)];
const CONNECTIONS = 200;
const REFUSED_KEYS = 5_000;
/** BENCH_COALESCE=false: every request its own upstream call (and its own allocations). */
const COALESCE = process.env.BENCH_COALESCE ?? 'true';
const OPTIONS = (process.env.BENCH_MEMORY_OPTIONS ?? '|--max-semi-space-size=16|--max-semi-space-size=32').split('|');
const node24 = process.env.BENCH_NODE24 ?? execFileSync('bash', ['.ci/node24'], { encoding: 'utf8' }).trim();

/** `count` queries, 50 in flight, each with a key the store has never seen. */
async function refusedKeys(url: string, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const headers = { 'content-type': 'application/json', authorization: `Bearer bench-refused-${process.pid}-${i}` };
      const body = JSON.stringify({ query: '{ pets(first: 1) { nodes { id } } }' });
      await (await fetch(url, { method: 'POST', headers, body })).arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
}

requireWrk();
pinSelf(LOAD_CORE);
const dir = mkdtempSync(join(tmpdir(), 'bench-memory-'));
const store = await startStore();
interface Subject {
  readonly version: string;
  readonly flags: string;
  readonly served: Awaited<ReturnType<typeof startGateway>>;
  readonly target: ReturnType<typeof gatewayTarget>;
  readonly started: number;
  readonly runs: number[][];
  peak: number;
}
const subjects: Subject[] = [];
for (const node of [process.execPath, join(node24, 'node')]) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  for (const options of OPTIONS) {
    const settings = { NODE_OPTIONS: options, PETSTORE_COALESCE: COALESCE };
    const served = await startGateway(SERVER_CORE, store.url, { node, settings });
    const target = gatewayTarget(version, served.url, served.pid);
    const flags = ['--max-old-space-size=256', options].filter(Boolean).join(' ');
    subjects.push({ version, flags, served, target, started: rssMb(served.pid), runs: [], peak: 0 });
  }
}
const run = (subject: Subject, seconds: number) =>
  load(subject.target, [subject.target.request(ONE_CALL)], { seconds, connections: CONNECTIONS, dir });
for (const subject of subjects) await run(subject, 5);
for (let round = 1; round <= ROUNDS; round++) {
  for (const subject of subjects) {
    let result: Awaited<ReturnType<typeof run>> | undefined;
    const peak = await peakRss(subject.served.pid, async () => {
      result = await run(subject, DURATION_S);
    });
    subject.peak = Math.max(subject.peak, peak);
    if (result?.errors) throw new Error(`${subject.version} ${subject.flags}: ${result.errors} errors`);
    subject.runs.push([result?.rps ?? 0, result?.p99Ms ?? 0]);
    process.stderr.write(
      `round ${round}: ${subject.version} ${subject.flags}: ${result?.rps.toFixed(0)} req/s, ${peak.toFixed(0)} MB\n`,
    );
  }
}
const rows = [];
for (const subject of subjects) {
  await refusedKeys(subject.served.url, REFUSED_KEYS);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const refused = rssMb(subject.served.pid);
  await stop(subject.served.child);
  const of = (column: number) => median(subject.runs.map((r) => r[column] as number));
  const rps = Math.round(of(0)).toLocaleString('en-US');
  const rss = [subject.started, subject.peak].map((mb) => mb.toFixed(0));
  rows.push([subject.version, `\`${subject.flags}\``, rps, of(1).toFixed(1), ...rss, refused.toFixed(0)]);
}
await stopAll();
rmSync(dir, { recursive: true, force: true });
const head = ['Node', 'flags', `req/s at ${CONNECTIONS}`, 'p99 ms', 'RSS started MB', `peak RSS MB at ${CONNECTIONS}`];
console.log(
  `Command: \`${COALESCE === 'false' ? 'BENCH_COALESCE=false ' : ''}npm run bench:memory\`: the one-call query from ${CONNECTIONS} connections, ${ROUNDS} × ${DURATION_S} s interleaved after a 5 s warm-up (medians; peak RSS the highest); then ${REFUSED_KEYS.toLocaleString('en-US')} refused keys.\n`,
);
console.log(table([...head, `RSS MB after ${REFUSED_KEYS.toLocaleString('en-US')} refused keys`], rows));
// The store runs in this process: exit, and the 'exit' handler stops every child left.
process.exit(0);
