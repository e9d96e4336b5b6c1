/**
 * A real redis-server for tests: started on a free port, stopped by its pid. Restartable on the
 * same port, so a test can take Redis away and bring it back under a running gateway.
 */

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Runs one redis-cli command against it (FLUSHALL, DBSIZE…). */
  cli(...args: string[]): Promise<string>;
  /** Kills the server (SIGKILL: state lost, as in a crash); `start` brings it back on the same port. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Kills it for good and removes its folder. */
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'petstore-redis-'));
  const pidfile = join(dir, 'redis.pid');
  let pid: number | undefined;

  async function start(): Promise<void> {
    await run('redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--pidfile',
      pidfile,
      '--dir',
      dir,
      '--logfile',
      join(dir, 'redis.log'),
    ]);
    for (let i = 0; i < 100; i++) {
      try {
        pid = Number(await readFile(pidfile, 'utf8'));
        if ((await cli('PING')) === 'PONG') return;
      } catch {}
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not start');
  }

  async function stop(): Promise<void> {
    if (pid === undefined) return;
    const stopping = pid;
    pid = undefined;
    try {
      process.kill(stopping, 'SIGKILL');
    } catch {}
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(stopping, 0);
      } catch {
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args]);
    return stdout.trim();
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    cli,
    start,
    kill: stop,
    async stop() {
      await stop();
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
