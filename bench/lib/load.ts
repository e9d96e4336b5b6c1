/**
 * The load tool of `npm run bench:throughput`, pinned to the load core: wrk (closed loop, one
 * thread, µs latency) when installed, else autocannon. A run sends a list of requests in turn, one
 * after another across all connections, so a list longer than the connection count never has two
 * identical requests in flight; a list of one is the classic single-request benchmark.
 */

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, LOAD_CORE, outputOf, pinned } from './processes.js';
import type { HttpRequest, Target } from './targets.js';
import { startCapture, type WireLatency } from './wire.js';

const AUTOCANNON = fileURLToPath(new URL('../../node_modules/autocannon/autocannon.js', import.meta.url));

export type Tool = 'wrk' | 'autocannon';

export interface LoadResult {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  /** Non-2xx answers, socket errors and timeouts. */
  readonly errors: number;
}

export interface Measurement extends LoadResult {
  /** CPU seconds the serving process used during the run, and the run's wall-clock seconds. */
  readonly cpuS: number;
  readonly wallS: number;
  /** With `wire`, the latency as the server's packets show it (bench/lib/wire.ts). */
  readonly wire?: WireLatency;
}

/** A setting from the environment that must be an integer of at least `least` (BENCH_ROUNDS and the like; 0 for BENCH_REWARM). */
export function positive(name: string, fallback: number, least = 1): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(Number.isInteger(value) && value >= least)) throw new Error(`${name} must be an integer of ${least} or more`);
  return value;
}

/** BENCH_TOOL if set, else wrk when installed, else autocannon (a project devDependency). */
export function chooseTool(wanted: string | undefined): Tool {
  if (wanted !== undefined && wanted !== 'wrk' && wanted !== 'autocannon')
    throw new Error('BENCH_TOOL: wrk or autocannon');
  if (wanted === 'autocannon') return 'autocannon';
  // wrk -v prints its version and exits 1; `command -v` is the honest test.
  try {
    execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' });
    return 'wrk';
  } catch {
    if (wanted === 'wrk') throw new Error('BENCH_TOOL=wrk but wrk is not installed (apt-get install -y wrk)');
    return 'autocannon';
  }
}

/** Lua long-bracket literal; the level is raised until the text cannot close it early. */
function luaString(text: string): string {
  let level = '=';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
}

/**
 * A wrk script printing one RESULT line. One request is set as wrk's static request; several are
 * formatted once in init and handed out in turn by request() (a Lua call per request, on the load
 * core). A `freshKey` request is formatted each time, with a key of this run's never sent before.
 */
function wrkScript(requests: readonly HttpRequest[]): string {
  const lines: string[] = [];
  const [only] = requests;
  if (only !== undefined && requests.length === 1 && only.freshKey !== true) {
    lines.push(`wrk.method = ${luaString(only.method)}`, `wrk.path = ${luaString(only.path)}`);
    for (const [name, value] of Object.entries(only.headers))
      lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`);
    if (only.body !== undefined) lines.push(`wrk.body = ${luaString(only.body)}`);
  } else {
    lines.push('local list = {');
    for (const request of requests) {
      const headers = Object.entries(request.headers).map(
        ([name, value]) => `[ ${luaString(name)} ] = ${luaString(value)}`,
      );
      const body = request.body === undefined ? 'nil' : luaString(request.body);
      const fresh = request.freshKey === true ? 'true' : 'false';
      lines.push(
        `  { ${luaString(request.method)}, ${luaString(request.path)}, { ${headers.join(', ')} }, ${body}, ${fresh} },`,
      );
    }
    // Unique to this script, so a run's keys are new to the warm-up's and to earlier runs'.
    const prefix = `bench-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}-`;
    lines.push(
      '}',
      'local raw = {}',
      'local turn = 0',
      'local sent = 0',
      'init = function(args)',
      '  for i, r in ipairs(list) do if not r[5] then raw[i] = wrk.format(r[1], r[2], r[3], r[4]) end end',
      'end',
      'request = function()',
      '  turn = turn % #list + 1',
      '  local r = list[turn]',
      '  if not r[5] then return raw[turn] end',
      '  sent = sent + 1',
      `  r[3]["Authorization"] = "Bearer ${prefix}" .. sent`,
      '  return wrk.format(r[1], r[2], r[3], r[4])',
      'end',
    );
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("RESULT %d %d %d %f %f\\n", summary.requests, summary.duration,',
    '    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(99)))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

export interface LoadOptions {
  readonly tool: Tool;
  readonly seconds: number;
  readonly connections: number;
  /** A folder for the wrk script (and a measured run's capture). */
  readonly dir: string;
  /** Whether `measure` also captures the run's packets for the latency on the wire (BENCH_WIRE). */
  readonly wire?: boolean;
}

/** Runs the load tool against `target`, sending `requests` in turn. autocannon takes a single request only. */
export async function load(
  target: Target,
  requests: readonly HttpRequest[],
  options: LoadOptions,
): Promise<LoadResult> {
  const { seconds, connections } = options;
  if (options.tool === 'wrk') {
    const script = join(options.dir, 'requests.lua');
    writeFileSync(script, wrkScript(requests));
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, target.origin];
    const out = await outputOf(pinned(LOAD_CORE, 'wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] }));
    const match = /^RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)$/m.exec(out);
    if (!match) throw new Error(`unexpected wrk output:\n${out}`);
    const [count, durationUs, errors, p50Us, p99Us] = match.slice(1).map(Number) as [
      number,
      number,
      number,
      number,
      number,
    ];
    return { rps: count / (durationUs / 1e6), p50Ms: p50Us / 1000, p99Ms: p99Us / 1000, requests: count, errors };
  }
  const [request] = requests;
  if (request === undefined || requests.length > 1)
    throw new Error('autocannon runs a single request here; install wrk for a mix');
  const args = [
    AUTOCANNON,
    '--json',
    '-c',
    String(connections),
    '-d',
    String(seconds),
    '-m',
    request.method,
    '-t',
    '10',
  ];
  for (const [name, value] of Object.entries(request.headers)) args.push('-H', `${name}=${value}`);
  if (request.body !== undefined) args.push('-b', request.body);
  args.push(new URL(request.path, target.origin).href);
  const out = await outputOf(pinned(LOAD_CORE, process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] }));
  const result = JSON.parse(out);
  return {
    rps: result.requests.total / (result.duration || seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

/** One measured run, with the serving process's CPU time around it. */
export async function measure(
  target: Target,
  requests: readonly HttpRequest[],
  options: LoadOptions,
): Promise<Measurement> {
  const capture = options.wire
    ? await startCapture(Number(new URL(target.origin).port), join(options.dir, 'run.pcap'))
    : undefined;
  const cpuBefore = cpuSeconds(target.pid);
  const start = performance.now();
  const result = await load(target, requests, options);
  const wallS = (performance.now() - start) / 1000;
  const cpuS = cpuSeconds(target.pid) - cpuBefore;
  return { ...result, cpuS, wallS, wire: await capture?.stop() };
}
