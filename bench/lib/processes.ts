/**
 * Processes of `npm run bench:throughput`: every server and load run is a child pinned to a core
 * with taskset, remembered here so that all of them are stopped by their own pid however the bench
 * ends. Also the per-process figures read from /proc (CPU time, resident set).
 */

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The load tool, the reference store and the bench itself. */
export const LOAD_CORE = '0';
/** Every server under test, alone. */
export const SERVER_CORE = '1';

const children: ChildProcess[] = [];

export const isRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/**
 * Spawns `command` pinned to `core` (taskset execs it, so the child's pid is the command's), under
 * `wrapper` if given: a command line that runs the one after it in the same process, as `env` and
 * valgrind do, so that the pid stays the one stopped and measured.
 */
export function pinned(
  core: string,
  command: string,
  args: string[],
  options: Parameters<typeof spawn>[2],
  wrapper: readonly string[] = [],
): ChildProcess {
  const child = spawn('taskset', ['-c', core, ...wrapper, command, ...args], options);
  children.push(child);
  return child;
}

/** Pins the calling process (and its threads) to `core`, where the machine allows it. */
export function pinSelf(core: string): void {
  try {
    execFileSync('taskset', ['-a', '-cp', core, String(process.pid)], { stdio: 'ignore' });
  } catch {}
}

/** Sends SIGTERM to every child still running, without waiting (for process 'exit'). */
export function signalAll(): void {
  for (const child of children) if (isRunning(child)) child.kill('SIGTERM');
}

/** Stops every child and waits for each to exit; one that ignores SIGTERM for 5 s gets SIGKILL. */
export async function stopAll(): Promise<void> {
  await Promise.all(children.filter(isRunning).map(stop));
}

/** Stops one child and waits for it to exit; SIGKILL if it ignores SIGTERM for 5 s. */
export function stop(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Appends the child's stdout and stderr to `file`, shown only if the server never answers. */
export function logTo(child: ChildProcess, file: string): void {
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (chunk: Buffer) => appendFileSync(file, chunk));
}

/** Collects a child's stdout until it exits; a non-zero exit is an error carrying that output. */
export function outputOf(child: ChildProcess): Promise<string> {
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${child.spawnargs.join(' ')} exited with ${code}: ${out}`)),
    );
  });
}

/** A loopback port nobody listens on right now (for peers that cannot listen on port 0 and say where). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system, all threads) process `pid` has used, from /proc/PID/stat (proc(5)). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces; fields count from after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Resident set of process `pid` in MB (/proc/PID/status VmRSS), or its peak so far (VmHWM). */
export function rssMb(pid: number, which: 'now' | 'peak' = 'now'): number {
  const field = which === 'now' ? /^VmRSS:\s+(\d+) kB$/m : /^VmHWM:\s+(\d+) kB$/m;
  const match = field.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}
