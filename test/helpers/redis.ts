/**
 * A real redis-server for tests: started on a free port, stopped by its pid. Restartable on the
 * same port, so a test can take Redis away and bring it back under a running gateway.
 *
 * The server runs in the foreground as our child (no --daemonize, no pidfile): a pidfile read
 * before Redis rewrites it gives an empty string (pid 0, which signals our whole process group)
 * or the pid of the server before a restart (which then never gets stopped). The pid used is the
 * one the server itself reports (`INFO server`, `process_id`) once it answers, checked against the
 * child we spawned, so a Redis of someone else's that took the port is never mistaken for ours.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkedPid, freePort, isAlive, redisFolderPrefix, stopProcess } from './processes.js';

const run = promisify(execFile);

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** The running server's pid (from `INFO server`), or undefined while it is stopped. */
  readonly pid: number | undefined;
  /** Runs one redis-cli command against it (FLUSHALL, DBSIZE…). */
  cli(...args: string[]): Promise<string>;
  /** Kills the server (SIGKILL: state lost, as in a crash) and waits until it is gone; `start` brings it back on the same port. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Kills it for good and removes its folder. */
  stop(): Promise<void>;
}

/** How long a starting server may take to answer PING, on a loaded machine. */
const START_TIMEOUT_MS = 15_000;

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), redisFolderPrefix()));
  const log = join(dir, 'redis.log');
  let pid: number | undefined;
  /** Resolves once the running server has exited whole (every thread, so its port is free again). */
  let exitedWhole: Promise<unknown> = Promise.resolve();

  async function start(): Promise<void> {
    if (pid !== undefined) throw new Error(`redis-server ${pid} is already running on port ${port}`);
    // `cwd` is the run's folder too: redis-server overwrites its environment (its process title),
    // so the test-run marker it inherits cannot be read back; the folder names the run instead.
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--logfile',
        log,
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(`exited (${signal ?? code})`));
      child.once('error', (error) => resolve(`could not be started: ${error.message}`));
    });
    exitedWhole = exited;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const reported = await serverPid().catch(() => undefined);
      if (reported !== undefined) {
        if (reported !== child.pid) {
          await stopChild(child);
          throw new Error(`port ${port} is served by another redis-server (pid ${reported}), not ours`);
        }
        pid = reported;
        return;
      }
      const early = await Promise.race([exited, delay(50).then(() => undefined)]);
      if (early !== undefined) throw new Error(`redis-server on port ${port} ${early}: ${await lastLine(log)}`);
    }
    await stopChild(child);
    throw new Error(`redis-server did not answer on port ${port} within ${START_TIMEOUT_MS} ms`);
  }

  /** The pid the server on our port reports, once it answers. */
  async function serverPid(): Promise<number> {
    const info = await cli('INFO', 'server');
    return checkedPid(/^process_id:(\d+)\s*$/m.exec(info)?.[1]);
  }

  async function kill(): Promise<void> {
    if (pid === undefined) return;
    const stopping = pid;
    pid = undefined;
    await stopProcess(stopping, 'SIGKILL');
    // A zombie leader can still have threads holding the listening socket until the whole process is reaped.
    await exitedWhole;
  }

  async function cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 });
    return stdout.trim();
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return pid;
    },
    cli,
    start,
    kill,
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid !== undefined && (await isAlive(child.pid))) await stopProcess(child.pid, 'SIGKILL');
}

async function lastLine(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trim().split('\n').at(-1) ?? '';
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
