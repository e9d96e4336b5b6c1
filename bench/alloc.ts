/**
 * `npm run bench:alloc`: what the gateway allocates per request, and where, with sharing off (every
 * request runs the whole path). The gateway runs as `npm start` runs it (dist/main.js) pinned to
 * core 1, with bench/alloc-preload.mjs loaded; wrk loads it with 32 connections from core 0. After a
 * 2 s warm-up, V8's sampling heap profiler records BENCH_DURATION seconds (default 10) twice, each
 * in a fresh gateway:
 *
 *   allocated   every allocation, including what either garbage collector freed: the work the
 *               young generation does per request
 *   kept        only what outlived the young generation (promoted, then freed by a full GC, or still
 *               live at the end): what drives full GCs, and with them the tail of the latency
 *
 * Each is printed in KB per request by owner and by the heaviest allocating functions, with the
 * scavenges and full GCs per 1,000 requests. BENCH_WORKLOAD=mix measures the distinct mix of
 * `bench:throughput` instead (it needs wrk), BENCH_WORKLOAD=new-keys a new API key the store refuses
 * with every request; BENCH_COALESCE=true the gateway's default; BENCH_ALLOC_TOP (15) how many
 * functions each table lists.
 *
 * This found the largest of the hot path's later wins (README: "What each change to the hot path
 * moved"): what is allocated per request is what a Node gateway pays for in GC, not in its own code.
 */

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallFrame, owner, where } from './lib/frames.js';
import { chooseTool, load, positive } from './lib/load.js';
import { loadWorkload, requestsOf, type Workload, workloadOf } from './lib/mix.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, signalAll, stop, stopAll } from './lib/processes.js';
import { startGateway, startStore } from './lib/servers.js';
import { gatewayTarget } from './lib/targets.js';

interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

interface Recorded {
  readonly profile: { readonly head: HeapNode };
  readonly gcs: { readonly minor: number; readonly major: number; readonly pauseMs: number };
}

const SECONDS = positive('BENCH_DURATION', 10);
const COALESCE = process.env.BENCH_COALESCE === 'true' ? 'true' : 'false';
const TOOL = chooseTool(process.env.BENCH_TOOL);
const WORKLOAD = workloadOf(TOOL);
const PRELOAD = fileURLToPath(new URL('./alloc-preload.mjs', import.meta.url));
/** Functions listed per table. */
const TOP = positive('BENCH_ALLOC_TOP', 15);

/**
 * Bytes by owner and by function (self size: where the allocation was made), over the whole profile.
 * A built-in (`Map`, `set`, `then`: no script) is named with the function that called it, and
 * counted to that function's owner, since that is the code that chose to allocate.
 */
function summarise(head: HeapNode): { all: number; owners: Map<string, number>; functions: Map<string, number> } {
  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  let all = 0;
  const stack: Array<[HeapNode, CallFrame | undefined]> = [[head, undefined]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [node, caller] = item;
    const builtIn = node.callFrame.url === '';
    // The nearest frame with a script above this node: what a built-in below it is named after.
    const scripted = builtIn ? caller : node.callFrame;
    for (const child of node.children) stack.push([child, scripted]);
    if (node.selfSize === 0) continue;
    all += node.selfSize;
    const frame = builtIn && caller !== undefined ? caller : node.callFrame;
    const who = owner(frame);
    owners.set(who, (owners.get(who) ?? 0) + node.selfSize);
    const name = builtIn
      ? `${node.callFrame.functionName || '(anonymous)'}${caller === undefined ? '' : ` in ${where(caller)}`}`
      : where(frame);
    functions.set(name, (functions.get(name) ?? 0) + node.selfSize);
  }
  return { all, owners, functions };
}

async function waitForFile(file: string, timeoutMs = 30_000): Promise<Recorded> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as Recorded;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`bench:alloc: no profile in ${file}: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function record(storeUrl: string, keep: 'all' | 'old', workload: Workload, dir: string) {
  const file = join(dir, `${keep}.json`);
  const gateway = await startGateway(
    SERVER_CORE,
    storeUrl,
    { PETSTORE_COALESCE: COALESCE, BENCH_ALLOC_FILE: file, BENCH_ALLOC_KEEP: keep },
    ['--import', PRELOAD],
  );
  try {
    const target = gatewayTarget(keep, gateway.url, gateway.pid);
    const requests = requestsOf(workload, target);
    const options = { tool: TOOL, connections: 32, dir };
    await load(target, requests, { ...options, seconds: 2 });
    // The preload's switch: the first SIGUSR2 starts sampling, the second writes the profile.
    process.kill(gateway.pid, 'SIGUSR2');
    const result = await load(target, requests, { ...options, seconds: SECONDS });
    process.kill(gateway.pid, 'SIGUSR2');
    const recorded = await waitForFile(file);
    return { result, recorded, ...summarise(recorded.profile.head) };
  } finally {
    await stop(gateway.child);
  }
}

const kb = (bytes: number, requests: number): string => (bytes / 1024 / Math.max(1, requests)).toFixed(2);

pinSelf(LOAD_CORE);
process.once('SIGINT', () => {
  signalAll();
  process.exit(130);
});
const dir = mkdtempSync(join(tmpdir(), 'petstore-alloc-'));
try {
  const store = await startStore(LOAD_CORE);
  const workload = await loadWorkload(WORKLOAD, SERVER_CORE, store.url);
  const runs = [
    ['allocated (everything, whatever freed it)', await record(store.url, 'all', workload, dir)],
    ['kept past the young generation (promoted or still live)', await record(store.url, 'old', workload, dir)],
  ] as const;
  console.log(
    `Command: \`${workload.setting}BENCH_COALESCE=${COALESCE} npm run bench:alloc\` (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC), ` +
      `${workload.description}, ${TOOL}, 32 connections, ${SECONDS} s after a 2 s warm-up; ` +
      `gateway on core ${SERVER_CORE}, V8's sampling heap profiler (every 1 KB on average).\n`,
  );
  for (const [label, { result, recorded, all, owners, functions }] of runs) {
    const n = result.requests;
    const { minor, major, pauseMs } = recorded.gcs;
    console.log(
      `**${label}**: ${kb(all, n)} KB per request over ${n.toLocaleString('en')} requests (${Math.round(result.rps).toLocaleString('en')} req/s); ` +
        `per 1,000 requests ${((minor * 1000) / n).toFixed(1)} scavenges, ${((major * 1000) / n).toFixed(2)} full GCs, ${((pauseMs * 1000) / n).toFixed(0)} ms of GC pauses\n`,
    );
    console.log('| who allocates | KB per request |\n|---|---:|');
    for (const [name, bytes] of [...owners].sort((a, b) => b[1] - a[1])) {
      if (bytes / all >= 0.005) console.log(`| ${name} | ${kb(bytes, n)} |`);
    }
    console.log('\n| heaviest allocating functions (self) | KB per request |\n|---|---:|');
    for (const [name, bytes] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
      console.log(`| \`${name}\` | ${kb(bytes, n)} |`);
    }
    console.log('');
  }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
