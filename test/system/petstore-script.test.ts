/**
 * `npm run petstore` as a person or a supervisor runs it: the real npm and the package's script,
 * the store from src/. Stopped through npm (SIGTERM to npm alone, as a process manager does) or by
 * a signal to its whole process group (Ctrl-C in a terminal), it exits 0 and leaves no process
 * behind: no tsx, node or esbuild still serving or holding the port. The command it prints to try
 * runs in any shell as printed (its URL quoted).
 */

import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  descendants,
  killTree,
  type Started,
  signalGroup,
  startUntil,
  stopProcess,
  waitGone,
} from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('npm run petstore', () => {
  let started: Started | undefined;
  /** Everything below npm once the store was up: a process npm left behind is no longer below it. */
  let below: number[] = [];
  afterEach(async () => {
    if (started !== undefined) await killTree(started.pid);
    for (const pid of below) await stopProcess(pid, 'SIGKILL');
    started = undefined;
    below = [];
  });

  async function start(): Promise<void> {
    started = await startUntil('npm', ['run', '--silent', 'petstore'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0' },
      ready: /^Try: .*\n/m,
      timeoutMs: 30_000,
      detached: true,
    });
    const url = /Pet Store listening at (\S+)/.exec(started.output())?.[1] as string;
    expect(started.ready[0].trim()).toBe(
      `Try: curl -H 'Authorization: Bearer petstore-demo-key' '${url}/pets?limit=3'`,
    );
    expect(
      (await fetch(`${url}/pets?limit=1`, { headers: { authorization: 'Bearer petstore-demo-key' } })).status,
    ).toBe(200);
    below = await descendants(started.pid);
  }

  it('stops, all of it, when npm alone is sent SIGTERM', async () => {
    await start();
    expect(below.length).toBeGreaterThan(0);
    process.kill((started as Started).pid, 'SIGTERM');
    await (started as Started).exited;
    // Every process that was below npm is gone (tsx's CLI used to stay, with the store under it).
    await waitGone(below, 5_000);
  }, 60_000);

  it('exits 0 when its process group gets SIGINT (Ctrl-C), though the store gets it twice', async () => {
    await start();
    await signalGroup((started as Started).pid, 'SIGINT');
    expect(await (started as Started).exited).toEqual({ code: 0, signal: null });
    await waitGone(below, 5_000);
  }, 60_000);
});
