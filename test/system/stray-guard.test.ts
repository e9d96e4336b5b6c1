/**
 * The run-wide guard of test/global-setup.ts: a test run that leaves a process alive must fail,
 * and the process must be gone afterwards. Runs vitest on a fixture that leaks a detached `sleep`
 * (no longer our child, so only the marker in its environment finds it) and a redis-server (whose
 * environment redis overwrites, so only its run's folder finds it).
 */

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { isAlive, TEST_RUN_ENV } from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

it('fails a run that leaves processes alive, a redis-server included, and kills them', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-stray-'));
  const pidFile = join(dir, 'pid');
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, LEAKED_PID_FILE: pidFile };
    // A run of its own: the outer run's marker would make the outer guard claim the sleep as ours too.
    delete env[TEST_RUN_ENV];
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'test/fixtures/leaky/vitest.config.ts'],
        { cwd: ROOT, env, timeout: 60_000 },
        (_error, stdout, stderr) => resolve({ code: child.exitCode, output: `${stdout}${stderr}` }),
      );
    });
    const leaked = Number(await readFile(pidFile, 'utf8'));
    const leakedRedis = Number(await readFile(`${pidFile}.redis`, 'utf8'));
    expect(result.code).toBe(1);
    expect(result.output).toContain('tests left 2 process(es) running (now killed)');
    expect(result.output).toContain('sleep 120');
    expect(result.output).toContain(`${leakedRedis} redis-server`);
    expect(await isAlive(leaked)).toBe(false);
    expect(await isAlive(leakedRedis)).toBe(false);
  } finally {
    const redisDir = await readFile(`${pidFile}.redis-dir`, 'utf8').catch(() => undefined);
    if (redisDir?.includes('petstore-redis-')) await rm(redisDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }
}, 90_000);
