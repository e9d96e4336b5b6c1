/**
 * `npm run bench:profile`: where the gateway's CPU goes on the one-call query (BENCH_WORKLOAD=mix:
 * the distinct mix), sharing off and on: the gateway as `npm start` runs it on core 1 under V8's
 * sampling profiler (`--cpu-prof`), wrk with 32 connections from core 0 for BENCH_DURATION s after a
 * 2 s warm-up. Self time by who owns the code (Node, each package, dist/, the garbage collector, V8,
 * idle) over the process's whole life, so the shares add up to 100%. BENCH_PROFILE_DIR=folder keeps
 * the .cpuprofile files for Chrome DevTools.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, requireWrk, setting } from './lib/load.js';
import { walkMix } from './lib/mix.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, stop, stopAll } from './lib/processes.js';
import { startGateway, startStore } from './lib/servers.js';
import { gatewayTarget, ONE_CALL, type PageQuery } from './lib/targets.js';
import { table } from './lib/text.js';

/** A frame of V8's .cpuprofile (the Chrome DevTools Protocol's Profiler.CallFrame). */
type CallFrame = { readonly functionName: string; readonly url: string; readonly lineNumber: number };

const PSEUDO: Record<string, string> = {
  '(idle)': 'idle (waiting on the store or wrk)',
  '(garbage collector)': 'garbage collector',
  '(program)': 'V8 itself (compiler, runtime)',
};

/** Who owns a frame: a package, Node, the gateway, or one of V8's pseudo-frames. */
function owner({ functionName, url }: CallFrame): string {
  if (url === '') return PSEUDO[functionName] ?? 'native code (JSON, crypto, buffers)';
  if (/^node:(internal\/)?_?(http|net|stream|tls|dns|url)/.test(url)) return 'Node: HTTP, sockets, streams';
  if (/^node:(internal\/)?(timers|process|async_hooks|event|abort)/.test(url)) return 'Node: timers, events';
  if (url.startsWith('node:')) return 'Node: other';
  const name = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (name !== undefined) return name.startsWith('@apollo/') ? 'Apollo Server (@apollo/*)' : name;
  return url.includes('/dist/') ? 'this gateway (dist/)' : 'other';
}

/** A function as `name file:line`, a package's files by package, the gateway's by dist/. */
const where = ({ functionName, url, lineNumber }: CallFrame): string =>
  `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/')}:${lineNumber + 1}`;

/** Self time by owner and by function, as shares of all samples, the heaviest first. */
function summarise(file: string): { owners: [string, number][]; functions: [string, number][] } {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map<number, CallFrame>(profile.nodes.map((node: any) => [node.id, node.callFrame]));
  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id: number, i: number) => {
    const frame = byId.get(id);
    const delta = profile.timeDeltas[i] ?? 0;
    if (frame === undefined) return;
    owners.set(owner(frame), (owners.get(owner(frame)) ?? 0) + delta);
    if (frame.url !== '') functions.set(where(frame), (functions.get(where(frame)) ?? 0) + delta);
    all += delta;
  });
  const shares = (totals: Map<string, number>) =>
    [...totals].map(([name, us]) => [name, us / all] as [string, number]).sort((a, b) => b[1] - a[1]);
  return { owners: shares(owners), functions: shares(functions).slice(0, 12) };
}

requireWrk();
pinSelf(LOAD_CORE);
const SECONDS = setting('BENCH_DURATION', 10);
const KEEP = process.env.BENCH_PROFILE_DIR || undefined;
const mix = process.env.BENCH_WORKLOAD === 'mix';
try {
  const store = await startStore();
  const pages: PageQuery[] = mix ? await walkMix(SERVER_CORE, store.url) : [ONE_CALL];
  console.log(
    `Command: \`${mix ? 'BENCH_WORKLOAD=mix ' : ''}npm run bench:profile\`: ${mix ? `the distinct mix (${pages.length} pages)` : 'the one-call query'}, ` +
      `wrk 1 thread, 32 connections, ${SECONDS} s after a 2 s warm-up; the gateway on core ${SERVER_CORE} under --cpu-prof.\n`,
  );
  for (const [label, settings] of [
    ['`PETSTORE_COALESCE=false`', { PETSTORE_COALESCE: 'false' }],
    ['coalescing on (default)', {}],
  ] as const) {
    if (KEEP !== undefined) mkdirSync(KEEP, { recursive: true });
    const dir = mkdtempSync(join(KEEP ?? tmpdir(), 'petstore-profile-'));
    const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=250'];
    const served = await startGateway(SERVER_CORE, store.url, { settings, nodeArgs });
    const target = gatewayTarget(label, served.url, served.pid);
    const requests = pages.map((page) => target.request(page, mix ? 'variables' : undefined));
    await load(target, requests, { seconds: 2, connections: 32, dir });
    const result = await load(target, requests, { seconds: SECONDS, connections: 32, dir });
    await stop(served.child); // the profile is written on exit
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`no profile was written for ${label}`);
    const { owners, functions } = summarise(join(dir, file));
    if (KEEP === undefined) rmSync(dir, { recursive: true, force: true });
    else console.error(`bench:profile: ${label}: ${dir}`);
    const percent = ([name, share]: [string, number]) => [name, `${(share * 100).toFixed(1)}%`];
    const shown = owners.filter(([, share]) => share >= 0.005).map(percent);
    const heaviest = functions.map(([name, share]) => percent([`\`${name}\``, share]));
    console.log(
      `**This gateway, ${label}**: ${Math.round(result.rps).toLocaleString('en')} req/s under the profiler\n`,
    );
    console.log(`${table(['who runs', 'share of the process'], shown)}\n`);
    console.log(`${table(['heaviest functions (self time)', 'share'], heaviest)}\n`);
  }
} finally {
  await stopAll();
}
// The store runs in this process: exit, and the 'exit' handler stops every child left.
process.exit(0);
