/**
 * The load tool: wrk (closed loop, one thread, µs latency), pinned to the load core. A run sends a
 * list of requests in turn across all connections, so a list longer than the connection count
 * never has two identical requests in flight; a list of one is wrk's static request.
 */

import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cpuSeconds, LOAD_CORE } from './processes.js';
import type { HttpRequest, Target } from './targets.js';

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

/** A wrk script printing one RESULT line; several requests are formatted once in init and handed out in turn. */
function wrkScript(requests: readonly HttpRequest[]): string {
  const format = (r: HttpRequest) => {
    const headers = Object.entries(r.headers).map(([name, value]) => `[ ${lua(name)} ] = ${lua(value)}`);
    return `wrk.format(${lua(r.method)}, ${lua(r.path)}, { ${headers.join(', ')} }, ${r.body ? lua(r.body) : 'nil'})`;
  };
  const [only] = requests;
  // One request is wrk's static one (wrk.format before init has no Host header yet: Node answers 400).
  const send =
    requests.length === 1 && only
      ? [
          `wrk.method = ${lua(only.method)}`,
          `wrk.path = ${lua(only.path)}`,
          `wrk.body = ${only.body ? lua(only.body) : 'nil'}`,
        ].concat(Object.entries(only.headers).map(([name, value]) => `wrk.headers[ ${lua(name)} ] = ${lua(value)}`))
      : [
          'local raw, turn = {}, 0',
          'init = function(args)',
          ...requests.map((r) => `  table.insert(raw, ${format(r)})`),
        ].concat(['end', 'request = function()', '  turn = turn % #raw + 1', '  return raw[turn]', 'end']);
  return [
    ...send,
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("RESULT %d %d %d %f %f\\n", summary.requests, summary.duration,',
    '    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(99)))',
    'end',
    '',
  ].join('\n');
}

/** Runs wrk against `target`, sending `requests` in turn, with the serving process's CPU time around it. */
export async function load(
  target: Target,
  requests: readonly HttpRequest[],
  { seconds, connections, dir }: { seconds: number; connections: number; dir: string },
) {
  const script = join(dir, 'requests.lua');
  writeFileSync(script, wrkScript(requests));
  const args = ['-c', LOAD_CORE, 'wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script];
  const cpuBefore = cpuSeconds(target.pid);
  const { stdout } = await promisify(execFile)('taskset', [...args, target.origin]);
  const cpuS = cpuSeconds(target.pid) - cpuBefore;
  const match = /^RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)$/m.exec(stdout);
  if (!match) throw new Error(`unexpected wrk output:\n${stdout}`);
  const [sent, us, errors, p50Us, p99Us] = match.slice(1).map(Number) as [number, number, number, number, number];
  return { rps: sent / (us / 1e6), p50Ms: p50Us / 1000, p99Ms: p99Us / 1000, requests: sent, errors, cpuS };
}
