/**
 * The load tool: wrk (closed loop, one thread, µs latency), pinned to the load core. A run sends a
 * list of requests in turn across all connections, so a list longer than the connection count
 * never has two identical requests in flight; a list of one is the classic single-request run.
 */

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuSeconds, LOAD_CORE, outputOf, pinned } from './processes.js';
import type { HttpRequest, Target } from './targets.js';

export interface LoadResult {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  /** Non-2xx answers, socket errors and timeouts. */
  readonly errors: number;
  /** CPU seconds the serving process used during the run, and the run's wall-clock seconds. */
  readonly cpuS: number;
  readonly wallS: number;
}

/** A setting from the environment: an integer of at least `least`. */
export function setting(name: string, fallback: number, least = 1): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(Number.isInteger(value) && value >= least)) throw new Error(`${name} must be an integer of ${least} or more`);
  return value;
}

/** Stops the bench before it starts anything when wrk is missing. */
export function requireWrk(): void {
  try {
    execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' });
  } catch {
    console.error('the benches need wrk (apt-get install -y wrk, brew install wrk)');
    process.exit(2);
  }
}

/** Lua long-bracket literal; the level is raised until the text cannot close it early. */
function lua(text: string): string {
  let level = '=';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
}

/**
 * A wrk script printing one RESULT line. One request is wrk's static request (no Lua per request);
 * several are formatted once in init and handed out in turn.
 */
function wrkScript(requests: readonly HttpRequest[]): string {
  const done = [
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("RESULT %d %d %d %f %f\\n", summary.requests, summary.duration,',
    '    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(99)))',
    'end',
    '',
  ];
  const [only] = requests;
  if (only !== undefined && requests.length === 1) {
    const headers = Object.entries(only.headers).map(([name, value]) => `wrk.headers[ ${lua(name)} ] = ${lua(value)}`);
    const body = only.body === undefined ? [] : [`wrk.body = ${lua(only.body)}`];
    return [`wrk.method = ${lua(only.method)}`, `wrk.path = ${lua(only.path)}`, ...headers, ...body, ...done].join(
      '\n',
    );
  }
  const list = requests.map((r) => {
    const headers = Object.entries(r.headers).map(([name, value]) => `[ ${lua(name)} ] = ${lua(value)}`);
    return `  wrk.format(${lua(r.method)}, ${lua(r.path)}, { ${headers.join(', ')} }, ${r.body === undefined ? 'nil' : lua(r.body)}),`;
  });
  return [
    'local raw, turn = nil, 0',
    'init = function(args)',
    '  raw = {',
    ...list,
    '  }',
    'end',
    'request = function()',
    '  turn = turn % #raw + 1',
    '  return raw[turn]',
    'end',
    ...done,
  ].join('\n');
}

export interface LoadOptions {
  readonly seconds: number;
  readonly connections: number;
  /** A folder for the wrk script. */
  readonly dir: string;
}

/** Runs wrk against `target`, sending `requests` in turn, with the serving process's CPU time around it. */
export async function load(target: Target, requests: readonly HttpRequest[], options: LoadOptions) {
  const script = join(options.dir, 'requests.lua');
  writeFileSync(script, wrkScript(requests));
  const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--timeout', '10s', '-s', script];
  const cpuBefore = cpuSeconds(target.pid);
  const start = performance.now();
  const out = await outputOf(
    pinned(LOAD_CORE, 'wrk', [...args, target.origin], { stdio: ['ignore', 'pipe', 'inherit'] }),
  );
  const wallS = (performance.now() - start) / 1000;
  const cpuS = cpuSeconds(target.pid) - cpuBefore;
  const match = /^RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)$/m.exec(out);
  if (!match) throw new Error(`unexpected wrk output:\n${out}`);
  const [count, durationUs, errors, p50Us, p99Us] = match.slice(1).map(Number) as number[] as [
    number,
    number,
    number,
    number,
    number,
  ];
  const result: LoadResult = {
    rps: count / (durationUs / 1e6),
    p50Ms: p50Us / 1000,
    p99Ms: p99Us / 1000,
    requests: count,
    errors,
    cpuS,
    wallS,
  };
  return result;
}
