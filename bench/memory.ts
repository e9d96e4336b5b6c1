/**
 * `npm run bench:memory`: the gateway's resident set on Node 20 and Node 24, with the NODE_OPTIONS
 * `npm start` sets and without them, side by side with the throughput each costs.
 *
 * For each Node (this one, and BENCH_NODE24: the folder `.ci/node24` prints, which it installs when
 * unset) and each setting of BENCH_MEMORY_OPTIONS (`|`-separated NODE_OPTIONS; default: none, and
 * the young-generation caps tried): the built gateway, as `npm start` runs it
 * (`--max-old-space-size=256`), pinned to core 1, the store on core 0; wrk sends the one-call query
 * from 200 connections for BENCH_DURATION seconds (10) after a 5 s warm-up: req/s, p99 and the
 * peak RSS (sampled every 100 ms). Then 5,000 requests each with an API key never seen before,
 * which the store refuses (401): what the refused-keys memory adds to the RSS, measured 2 s after.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, requireWrk, setting } from './lib/load.js';
import { LOAD_CORE, peakRss, pinSelf, rssMb, SERVER_CORE, stop, stopAll } from './lib/processes.js';
import { startGateway, startStore } from './lib/servers.js';
import { gatewayTarget, ONE_CALL } from './lib/targets.js';
import { table } from './lib/text.js';

const DURATION_S = setting('BENCH_DURATION', 10);
const CONNECTIONS = 200;
const REFUSED_KEYS = 5_000;
const OPTIONS = (process.env.BENCH_MEMORY_OPTIONS ?? '|--max-semi-space-size=16|--max-semi-space-size=32').split('|');

function node24(): string {
  const folder = process.env.BENCH_NODE24 ?? execFileSync('bash', ['.ci/node24'], { encoding: 'utf8' }).trim();
  return join(folder, 'node');
}

/** `count` queries, 50 in flight, each with a key the store has never seen. */
async function refusedKeys(url: string, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer bench-refused-${process.pid}-${i}` },
        body: JSON.stringify({ query: '{ pets(first: 1) { nodes { id } } }' }),
      });
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
}

requireWrk();
pinSelf(LOAD_CORE);
const dir = mkdtempSync(join(tmpdir(), 'bench-memory-'));
const rows: string[][] = [];
try {
  const store = await startStore();
  for (const node of [process.execPath, node24()]) {
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    for (const options of OPTIONS) {
      const served = await startGateway(SERVER_CORE, store.url, { node, settings: { NODE_OPTIONS: options } });
      const target = gatewayTarget('gateway', served.url, served.pid);
      const started = rssMb(served.pid);
      const requests = [target.request(ONE_CALL)];
      await load(target, requests, { seconds: 5, connections: CONNECTIONS, dir });
      let result: Awaited<ReturnType<typeof load>> | undefined;
      const peak = await peakRss(served.pid, async () => {
        result = await load(target, requests, { seconds: DURATION_S, connections: CONNECTIONS, dir });
      });
      const before = rssMb(served.pid);
      await refusedKeys(served.url, REFUSED_KEYS);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const grown = rssMb(served.pid) - before;
      const flags = ['--max-old-space-size=256', options].filter(Boolean).join(' ');
      rows.push([
        `Node ${version}`,
        `\`${flags}\``,
        Math.round(result?.rps ?? 0).toLocaleString('en-US'),
        (result?.p99Ms ?? 0).toFixed(1),
        started.toFixed(0),
        peak.toFixed(0),
        `+${grown.toFixed(0)}`,
      ]);
      process.stderr.write(`${rows.at(-1)?.join(' | ')}\n`);
      await stop(served.child);
    }
  }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
const head = ['Node', 'flags', `req/s at ${CONNECTIONS}`, 'p99 ms', 'RSS started MB', `peak RSS MB at ${CONNECTIONS}`];
console.log(
  `Command: \`npm run bench:memory\`: the one-call query from ${CONNECTIONS} connections, ${DURATION_S} s after a 5 s warm-up; then ${REFUSED_KEYS.toLocaleString('en-US')} refused keys.\n`,
);
console.log(table([...head, `RSS after ${REFUSED_KEYS.toLocaleString('en-US')} refused keys MB`], rows));
// The store runs in this process: exit, and the 'exit' handler stops every child left.
process.exit(0);
