/**
 * Child processes for tests: start one and wait for the line that says it is ready, stop it by its
 * own pid and check that it, and anything it started, is gone. Linux only (/proc).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Started {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The ready line's match. */
  readonly ready: RegExpExecArray;
  readonly exited: Promise<Exit>;
  /** stdout and stderr so far. */
  output(): string;
}

export interface StartOptions {
  readonly cwd: string;
  readonly env: Record<string, string>;
  /** Matched against stdout and stderr; the process is ready once it matches. */
  readonly ready: RegExp;
  readonly timeoutMs: number;
}

export async function startUntil(command: string, args: readonly string[], options: StartOptions): Promise<Started> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${command}`);
  let output = '';
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${command} ${args.join(' ')}: not ready within ${options.timeoutMs} ms:\n${output}`));
    }, options.timeoutMs);
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = options.ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(
        new Error(`${command} ${args.join(' ')} exited (${exit.signal ?? exit.code}) before it was ready:\n${output}`),
      );
    });
  }).catch(async (error: unknown) => {
    await killTree(pid);
    throw error;
  });
  return { child, pid, ready, exited, output: () => output };
}

/** Whether a process with this pid still exists (a zombie not yet reaped counts as gone). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The pids of every process below `pid` (children, their children…). */
export async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  for (const entry of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {}
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of parents.get(queue.shift() as number) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** SIGKILLs `pid` and everything below it, each by its own pid, and waits until all are gone. */
export async function killTree(pid: number): Promise<void> {
  const pids = [pid, ...(await descendants(pid))];
  for (const each of pids) {
    try {
      process.kill(each, 'SIGKILL');
    } catch {}
  }
  await waitGone(pids, 5_000);
}

/** Waits until none of `pids` exists; throws naming the survivors after `ms`. */
export async function waitGone(pids: readonly number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const alive: number[] = [];
    for (const pid of pids) if (await isAlive(pid)) alive.push(pid);
    if (alive.length === 0) return;
    if (Date.now() > deadline) throw new Error(`processes still running: ${alive.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
