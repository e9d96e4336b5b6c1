/**
 * The processes of a bench: every server is a child pinned to a core with taskset, remembered here
 * so that all of them are stopped by their own pid however the bench ends; what /proc says of one.
 */

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The load tool, the reference store and the bench itself. */
export const LOAD_CORE = '0';
/** Every server under test, alone. */
export const SERVER_CORE = '1';

const children: ChildProcess[] = [];
const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** Spawns `command` pinned to `core`; taskset execs it, so the child's pid is the command's. */
export function pinned(core: string, command: string, args: string[], options: Parameters<typeof spawn>[2]) {
  const child = spawn('taskset', ['-c', core, command, ...args], options);
  children.push(child);
  return child;
}

/** Pins the calling process (and its threads) to `core`, where the machine allows it. */
export function pinSelf(core: string): void {
  try {
    execFileSync('taskset', ['-a', '-cp', core, String(process.pid)], { stdio: 'ignore' });
  } catch {}
}

/** Stops one child and waits for it to exit; SIGKILL if it ignores SIGTERM for 5 s. */
export function stop(child: ChildProcess): Promise<void> {
  if (!running(child)) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => resolve(clearTimeout(force)));
    child.kill('SIGTERM');
  });
}

export const stopAll = async (): Promise<void> => void (await Promise.all(children.map(stop)));
process.on('exit', () => {
  for (const child of children) if (running(child)) child.kill('SIGTERM');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

/** A loopback port nobody listens on right now (for servers that cannot listen on port 0 and say where). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system, all threads) process `pid` has used (proc(5), /proc/PID/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces; fields count from after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Resident set of process `pid` in MB (/proc/PID/status VmRSS). */
export const rssMb = (pid: number): number =>
  Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** Peak resident set of `pid` (sampled every 100 ms) while `work` runs. */
export async function peakRss(pid: number, work: () => Promise<unknown>): Promise<number> {
  let peak = rssMb(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 100);
  await work().finally(() => clearInterval(sampler));
  return Math.max(peak, rssMb(pid));
}
