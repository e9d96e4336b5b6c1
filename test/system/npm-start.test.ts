/**
 * `npm start`'s own script (read from package.json) is run by a real npm, in a scratch folder whose
 * dist/main.js is a stand-in that reports its heap limit and the signals it gets: the real one would
 * need a build, and a build here would rewrite the dist/ that other tests run. Its build step
 * (scripts/prestart.mjs) runs the same way, with a stand-in compiler that logs each build.
 */

import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/entry-point.js';
import { descendants, killTree, type Started, startUntil, trackedEnv, waitGone } from '../helpers/processes.js';

describe('npm start', () => {
  /** Scratch folders of this test (one test starts npm twice); removed after each. */
  const folders: string[] = [];
  let started: Started | undefined;

  afterEach(async () => {
    if (started !== undefined) await killTree(started.pid);
    started = undefined;
    for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
  });

  /** npm running package.json's start script in a scratch folder, its dist/main.js a stand-in. */
  async function npmStart(env: Record<string, string> = {}): Promise<Started> {
    const project = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const folder = await mkdtemp(join(tmpdir(), 'petstore-npm-start-'));
    folders.push(folder);
    await mkdir(join(folder, 'dist'));
    await writeFile(
      join(folder, 'package.json'),
      JSON.stringify({ name: 'start-script', private: true, scripts: { start: project.scripts.start } }),
    );
    await writeFile(
      join(folder, 'dist', 'main.js'),
      [
        "const { getHeapStatistics } = require('node:v8');",
        "console.log('heap limit MB', Math.round(getHeapStatistics().heap_size_limit / 1048576));",
        "process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(0); });",
        'setInterval(() => {}, 1000);',
      ].join('\n'),
    );
    return startUntil('npm', ['start', '--silent'], {
      cwd: folder,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      ready: /heap limit MB (\d+)/,
      timeoutMs: 30_000,
    });
  }

  it('hands SIGTERM to the gateway, which drains and exits 0, and leaves no process behind', async () => {
    started = await npmStart();
    const below = await descendants(started.pid);
    expect(below.length).toBeGreaterThan(0);
    process.kill(started.pid, 'SIGTERM');
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.output()).toContain('got SIGTERM');
    await waitGone(below, 5_000);
  });

  it('caps the V8 heap at 256 MB and the young generation at 16 MB semi-spaces, and a NODE_OPTIONS of the caller overrides them', async () => {
    // The limit V8 reports is the old space plus the young generation (three semi-spaces): compare
    // with what the same node on PATH, the one npm start runs, reports for the flags themselves.
    // Without the semi-space cap, Node 24 reports 448 for 256 (64 MB semi-spaces), Node 20 304.
    const limitWith = (...flags: string[]) =>
      Number(
        execFileSync(
          'node',
          [...flags, '-e', "console.log(Math.round(require('node:v8').getHeapStatistics().heap_size_limit / 1048576))"],
          { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
        ).trim(),
      );
    started = await npmStart();
    expect(Number(started.ready[1])).toBe(limitWith('--max-old-space-size=256', '--max-semi-space-size=16'));
    expect(Number(started.ready[1])).toBeLessThan(limitWith('--max-old-space-size=1024'));
    await killTree(started.pid);
    started = await npmStart({ NODE_OPTIONS: '--max-old-space-size=1024 --max-semi-space-size=8' });
    expect(Number(started.ready[1])).toBe(limitWith('--max-old-space-size=1024', '--max-semi-space-size=8'));
  });
});

describe("npm start's build step (scripts/prestart.mjs)", () => {
  let folder: string;

  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'petstore-prestart-'));
  });
  afterEach(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  /**
   * A scratch project with the real start, prestart and build-inputs scripts and the real build
   * script's shape, whose compiler is a stand-in that writes dist/main.js and logs each build
   * (a real tsc takes seconds and would rewrite the dist/ other tests run). A stand-in
   * typescript package makes it a development checkout; without it, a production install.
   */
  async function project(): Promise<void> {
    const real = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const build = real.scripts.build as string;
    // The real build with the compiler and the GraphiQL copy replaced by the stand-in.
    const shape = /^node scripts\/build-inputs\.mjs begin && (.+) && node scripts\/build-inputs\.mjs done$/.exec(build);
    expect(shape, `the build script: ${build}`).not.toBeNull();
    await writeFile(
      join(folder, 'package.json'),
      JSON.stringify({
        name: 'prestart-check',
        private: true,
        type: 'module',
        scripts: {
          start: real.scripts.start,
          prestart: real.scripts.prestart,
          build: 'node scripts/build-inputs.mjs begin && node compile.mjs && node scripts/build-inputs.mjs done',
        },
      }),
    );
    await mkdir(join(folder, 'scripts'));
    for (const script of ['prestart.mjs', 'build-inputs.mjs']) {
      await writeFile(join(folder, 'scripts', script), await readFile(join(ROOT, 'scripts', script)));
    }
    await writeFile(
      join(folder, 'compile.mjs'),
      [
        "import { appendFileSync, mkdirSync, writeFileSync, existsSync } from 'node:fs';",
        "if (existsSync('fail-build')) process.exit(2);",
        "mkdirSync('dist', { recursive: true });",
        "writeFileSync('dist/main.js', `console.log('main ran');\\n`);",
        "appendFileSync('builds.log', 'built\\n');",
      ].join('\n'),
    );
    await mkdir(join(folder, 'src'));
    await writeFile(join(folder, 'src', 'main.ts'), 'export {};\n');
    await writeFile(join(folder, 'src', 'other.ts'), 'export const a = 1;\n');
    await mkdir(join(folder, 'node_modules', 'typescript', 'bin'), { recursive: true });
    await writeFile(
      join(folder, 'node_modules', 'typescript', 'package.json'),
      '{"name":"typescript","version":"0.0.0"}',
    );
    await writeFile(join(folder, 'node_modules', 'typescript', 'bin', 'tsc'), '');
  }

  async function npmStart(): Promise<{ code: number | null; output: string; builds: number }> {
    const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn('npm', ['start', '--silent'], {
        cwd: folder,
        env: trackedEnv({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const collect = (chunk: Buffer) => {
        output += chunk.toString('utf8');
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.once('close', (code) => resolve({ code, output }));
    });
    const log = await readFile(join(folder, 'builds.log'), 'utf8').catch(() => '');
    return { ...run, builds: log.split('\n').filter(Boolean).length };
  }

  it('builds on the first start, not again while nothing the build reads has changed', async () => {
    await project();
    expect(await npmStart()).toEqual({ code: 0, output: 'main ran\n', builds: 1 });
    expect(await npmStart()).toEqual({ code: 0, output: 'main ran\n', builds: 1 });
  }, 60_000);

  it('builds again when a source changes (by content, whatever its time) or is removed, or the lockfile changes', async () => {
    await project();
    expect((await npmStart()).builds).toBe(1);
    const file = join(folder, 'src', 'other.ts');
    const { mtime } = await stat(file);
    await writeFile(file, 'export const a = 2;\n');
    // The old modification time back: a copy or checkout that keeps times hides nothing.
    await utimes(file, mtime, mtime);
    expect((await npmStart()).builds).toBe(2);
    await rm(join(folder, 'src', 'other.ts'));
    expect((await npmStart()).builds).toBe(3);
    await writeFile(join(folder, 'package-lock.json'), '{}');
    expect((await npmStart()).builds).toBe(4);
  }, 60_000);

  it('builds again after a build that failed, and does not run what the failed build left', async () => {
    await project();
    expect((await npmStart()).builds).toBe(1);
    await writeFile(join(folder, 'src', 'other.ts'), 'export const a = 3;\n');
    await writeFile(join(folder, 'fail-build'), '');
    const failed = await npmStart();
    expect(failed.code).not.toBe(0);
    expect(failed.output).not.toContain('main ran');
    await rm(join(folder, 'fail-build'));
    expect(await npmStart()).toEqual({ code: 0, output: 'main ran\n', builds: 2 });
  }, 60_000);

  it('runs dist/ as it is where TypeScript is not installed (a production install), changed sources or not', async () => {
    await project();
    expect((await npmStart()).builds).toBe(1);
    await rm(join(folder, 'node_modules'), { recursive: true });
    await writeFile(join(folder, 'src', 'other.ts'), 'export const a = 4;\n');
    expect(await npmStart()).toEqual({ code: 0, output: 'main ran\n', builds: 1 });
  }, 60_000);
});
