/**
 * Processes the tests start, and stopping them safely. Every child a test spawns carries the test
 * run's marker in its environment (PETSTORE_TEST_RUN, set by test/global-setup.ts), so the global
 * teardown can find anything still alive, however it was started and whoever its parent is now.
 *
 * Children that print a ready line are started with `startUntil`; a process and everything below it
 * is stopped with `killTree`.
 *
 * Signals go to one positive pid only: `process.kill(0, …)` signals the whole process group (npm,
 * vitest and the shell that ran them), and a negative pid a group; both are refused here. The one
 * exception is `signalGroup`, for a group a test made itself (a child spawned detached), never the
 * test runner's own.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';

/** The environment variable naming this test run; inherited by every process a test starts. */
export const TEST_RUN_ENV = 'PETSTORE_TEST_RUN';

/** `env` plus the run marker: for children spawned with an environment of their own. */
export function trackedEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const run = process.env[TEST_RUN_ENV];
  return run === undefined ? { ...env } : { ...env, [TEST_RUN_ENV]: run };
}

/**
 * How a test redis-server's folder (its working directory) is named: with the run's marker, since
 * redis-server overwrites its environment to set its title and the marker there cannot be read back.
 */
export function redisFolderPrefix(run: string | undefined = process.env[TEST_RUN_ENV]): string {
  return run === undefined ? 'petstore-redis-' : `petstore-redis-${run}-`;
}

/** A pid that is safe to signal: a positive safe integer. Anything else throws. */
export function checkedPid(value: unknown): number {
  const pid = typeof value === 'string' && /^[0-9]+$/.test(value.trim()) ? Number(value) : value;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) {
    throw new Error(`refusing to use ${JSON.stringify(value)} as a pid: only a positive integer names one process`);
  }
  return pid;
}

/** Whether `pid` is a running process (a zombie, dead but not yet reaped, is not). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(checkedPid(pid), 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; comm may hold spaces or parentheses, so read after the last ')'.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    // Reaped between the two checks (ENOENT, or ESRCH mid-read); with no /proc at all (not Linux), kill(0) is all there is.
    return !existsSync('/proc/self');
  }
}

/**
 * Signals `pid` and waits until it is gone; SIGKILL after `graceMs`. Throws if it outlives that too,
 * so a test never passes while leaving a process behind.
 */
export async function stopProcess(pid: number, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<void> {
  const target = checkedPid(pid);
  for (const [next, waitMs] of [
    [signal, graceMs],
    ['SIGKILL', 5_000],
  ] as const) {
    try {
      process.kill(target, next);
    } catch {
      return; // already gone
    }
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      if (!(await isAlive(target))) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`process ${target} is still alive after SIGKILL`);
}

/** `pid` and every process above it, up to init: they carry the marker when a run was started with it set. */
export async function ancestorsOf(pid: number): Promise<Set<number>> {
  const found = new Set<number>();
  for (let current = pid; current > 1 && !found.has(current); ) {
    found.add(current);
    const stat = await readFile(`/proc/${current}/stat`, 'utf8').catch(() => '');
    // The fourth field, after "pid (comm) state".
    current = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return found;
}

export interface TrackedProcess {
  readonly pid: number;
  readonly command: string;
}

/**
 * Every live process of test run `run` (its environment carries the marker, or it is a redis-server
 * working in the run's folder), except `exclude`.
 */
export async function findTracked(run: string, exclude: ReadonlySet<number>): Promise<TrackedProcess[]> {
  const marker = `${TEST_RUN_ENV}=${run}`;
  const found: TrackedProcess[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const pid = Number(entry);
    if (exclude.has(pid)) continue;
    try {
      const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
      const ours =
        environ.includes(marker) || (await readlink(`/proc/${pid}/cwd`)).includes(`/${redisFolderPrefix(run)}`);
      if (!ours || !(await isAlive(pid))) continue;
      const command = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim();
      found.push({ pid, command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

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
  /** Lead a process group of its own (for `signalGroup`), as a program run from a terminal does. */
  readonly detached?: boolean;
}

/**
 * The child's exit, once what it wrote to its pipes has been read ('close'), so `output()` is
 * complete; 'exit' alone can come before the last chunk. A grandchild still holding the pipes would
 * delay 'close' for as long as it lives, so that wait is bounded by `drainMs` after the exit.
 */
function drainedExit(child: ChildProcess, drainMs = 2_000): Promise<Exit> {
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      const timer = setTimeout(() => resolve({ code, signal }), drainMs);
      void closed.then(() => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    }),
  );
}

export async function startUntil(command: string, args: readonly string[], options: StartOptions): Promise<Started> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: trackedEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${command}`);
  let output = '';
  const exited = drainedExit(child);
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
  const pids = [checkedPid(pid), ...(await descendants(pid))];
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

/**
 * Signals every process of the group `leader` leads, as a terminal's Ctrl-C or a supervisor does.
 * Only a group a test made (its child spawned with `detached: true`, whose pid is then the group's
 * id) and never this process's own group: anything else throws.
 */
export async function signalGroup(leader: number, signal: NodeJS.Signals): Promise<void> {
  const pid = checkedPid(leader);
  const groupOf = async (of: number | 'self') => {
    const stat = await readFile(`/proc/${of}/stat`, 'utf8');
    // The fifth field, after "pid (comm) state ppid".
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  };
  if ((await groupOf(pid)) !== pid || (await groupOf('self')) === pid) {
    throw new Error(`process ${pid} does not lead a process group of its own that a test made`);
  }
  process.kill(-pid, signal);
}

/** A TCP port on loopback that nothing listens on (free at the moment of asking). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
