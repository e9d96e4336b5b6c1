/**
 * What the real entry point (`node --import tsx src/main.ts`) holds once started: the growing factor
 * V8 applies to its old generation, and the packages it loaded without Redis. Both are read from the
 * real process, through a test-only preload that acts on SIGUSR2 (a full GC; a list of its module cache).
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { MAIN, READY, ROOT } from '../helpers/entry-point.js';
import { killTree, type Started, startUntil } from '../helpers/processes.js';

describe('the entry point, read through a test-only preload that acts on SIGUSR2', () => {
  let started: Started | undefined;
  let folder: string | undefined;

  afterEach(async () => {
    if (started !== undefined) await killTree(started.pid);
    started = undefined;
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
    folder = undefined;
  });

  /**
   * Starts the entry point with `flags` and a preload of `source` (this test's, never the
   * gateway's), sends it SIGUSR2, and returns what it printed from then until `answered` matched.
   */
  async function onSignal(source: string, flags: readonly string[], answered: RegExp): Promise<string> {
    folder = await mkdtemp(join(tmpdir(), 'petstore-preload-'));
    const preload = join(folder, 'on-signal.cjs');
    await writeFile(preload, `process.on('SIGUSR2', () => { ${source} });\n`);
    started = await startUntil(process.execPath, [...flags, '--require', preload, ...MAIN], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'warn' },
      ready: READY,
      timeoutMs: 30_000,
    });
    const before = started.output().length;
    process.kill(started.pid, 'SIGUSR2');
    const since = () => started?.output().slice(before) ?? '';
    const deadline = Date.now() + 10_000;
    while (!answered.test(since()) && Date.now() < deadline) await delay(50);
    expect(since()).toMatch(answered);
    return since();
  }

  describe("the old generation's growing factor (src/heap.ts)", () => {
    /**
     * The factor V8 grows the old generation by after a full GC, from its --trace-gc-verbose lines:
     * Node 20 prints the factor applied in brackets after the new limit (its "factor" line is
     * computed before the flag applies), Node 24 on the "factor" line itself.
     */
    function appliedFactor(output: string): number | undefined {
      const node20 = [...output.matchAll(/\[HeapController\] Limit: .*\(([\d.]+)\)$/gm)].at(-1);
      const node24 = [...output.matchAll(/\[HeapController\] factor ([\d.]+) /g)].at(-1);
      const found = node20?.[1] ?? node24?.[1];
      return found === undefined ? undefined : Number(found);
    }

    /** The entry point with the heap cap npm start sets, plus `flags`, after one full GC. */
    async function gcOnce(flags: readonly string[]): Promise<number | undefined> {
      const output = await onSignal(
        "globalThis.gc(); console.log('full GC done');",
        ['--max-old-space-size=256', '--expose-gc', '--trace-gc-verbose', ...flags],
        /full GC done/,
      );
      return appliedFactor(output);
    }

    it('is 2 under the 256 MB cap (V8 alone would use at most 1.3 there)', async () => {
      expect(await gcOnce([])).toBe(2);
    });

    it('is the one given on the command line when there is one', async () => {
      expect(await gcOnce(['--heap-growing-percent=50'])).toBe(1.5);
    });
  });

  describe('what a gateway without Redis loads', () => {
    // Each stays in the old generation all the process's life, and V8 lets that grow to twice its
    // live size before a full GC (src/heap.ts): ioredis ~2 MB, undici's fetch, WebSocket, cache and
    // mocks 3.2 MB, for nothing a gateway without REDIS_URL uses. undici's index would also make its
    // Agent the process's global fetch dispatcher: a side effect on a host that embeds the gateway.
    it("is neither ioredis nor undici's index, only undici's Pool", async () => {
      const listed = /^loaded (\[.*\])$/m;
      const output = await onSignal("console.log('loaded ' + JSON.stringify(Object.keys(require.cache)));", [], listed);
      const loaded = (JSON.parse(listed.exec(output)?.[1] ?? '[]') as string[]).map((path) =>
        path.replaceAll('\\', '/'),
      );
      // The list is real: the gateway's one HTTP client is in it.
      expect(loaded.some((path) => path.endsWith('/node_modules/undici/lib/dispatcher/pool.js'))).toBe(true);
      expect(loaded.filter((path) => path.includes('/node_modules/ioredis/'))).toEqual([]);
      expect(loaded.filter((path) => path.endsWith('/node_modules/undici/index.js'))).toEqual([]);
    });
  });
});
