/**
 * Run-wide guard: every process the tests start inherits a marker of this run (see
 * test/helpers/processes.ts); at the end, any such process still alive is killed and fails the run.
 * A test that leaves a redis-server, a store or a gateway process running is a failing test.
 */

import { randomUUID } from 'node:crypto';
import { ancestorsOf, findTracked, stopProcess, TEST_RUN_ENV } from './helpers/processes.js';

export function setup(): void {
  // Workers are forked after this, so they and everything they spawn inherit it.
  process.env[TEST_RUN_ENV] ??= randomUUID();
}

export async function teardown(): Promise<void> {
  const run = process.env[TEST_RUN_ENV] as string;
  // This process and what started it (npm, a shell) carry the marker when the run was given one
  // (npm run test:stress does); Vitest's own workers carry it too and are still closing.
  const strays = (await findTracked(run, await ancestorsOf(process.pid))).filter(
    ({ command }) => !command.includes('node_modules/vitest/'),
  );
  if (strays.length === 0) return;
  await Promise.allSettled(strays.map(({ pid }) => stopProcess(pid, 'SIGKILL')));
  process.exitCode = 1;
  throw new Error(
    `tests left ${strays.length} process(es) running (now killed):\n${strays
      .map(({ pid, command }) => `  ${pid} ${command}`)
      .join('\n')}`,
  );
}
