/**
 * The redis-server test helper: a wrong pid once made a test kill its own process group (pid 0)
 * and left servers running after a restart (a stale pid). Restarted fifty times in a row, it must
 * know the pid of the server that is running every time, and leave nothing running.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checkedPid, isAlive } from '../helpers/processes.js';
import { startRedis } from '../helpers/redis.js';

const run = promisify(execFile);

/** The pids of redis-server processes listening on `port`, as the system sees them. */
async function serversOn(port: number): Promise<number[]> {
  const { stdout } = await run('pgrep', ['-f', `redis-server 127.0.0.1:${port}`]).catch(() => ({ stdout: '' }));
  return stdout.split('\n').filter(Boolean).map(Number);
}

describe('startRedis', () => {
  it('knows the running pid across 50 restarts and leaves nothing running', async () => {
    const redis = await startRedis();
    const seen = new Set<number>();
    try {
      for (let i = 0; i < 50; i++) {
        const pid = checkedPid(redis.pid);
        expect(seen.has(pid)).toBe(false);
        seen.add(pid);
        expect(await serversOn(redis.port)).toEqual([pid]);
        expect(await redis.cli('SET', 'restart', String(i))).toBe('OK');
        await redis.kill();
        expect(redis.pid).toBeUndefined();
        expect(await isAlive(pid)).toBe(false);
        await redis.start();
        // A SIGKILLed server keeps nothing: this is a new one.
        expect(await redis.cli('GET', 'restart')).toBe('');
      }
    } finally {
      await redis.stop();
    }
    expect(await serversOn(redis.port)).toEqual([]);
    for (const pid of seen) expect(await isAlive(pid)).toBe(false);
  }, 120_000);

  it('refuses to signal anything but one positive pid', () => {
    for (const bad of [0, -1, '', '0', ' ', Number.NaN, 1.5, '12a', undefined, null]) {
      expect(() => checkedPid(bad)).toThrow(/refusing/);
    }
    expect(checkedPid('4242\n')).toBe(4242);
  });
});
