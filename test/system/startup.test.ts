/**
 * Starting the gateway: the real entry point (`node --import tsx src/main.ts`) refuses a setting a
 * person can fix with exactly one line on stderr naming it, and exit code 1, never a stack trace; an
 * upstream that does not answer is said in one line, and the gateway starts anyway. In process,
 * `/ready` answers 503 while start-up waits for Redis, and 200 once it has answered.
 *
 * The Redis that does not answer is a real redis-server stopped with SIGSTOP: it accepts TCP
 * connections (the kernel does) and answers nothing until SIGCONT, as a hung or overloaded one would.
 *
 * `npm start`'s own script (read from package.json) is run by a real npm, in a scratch folder whose
 * dist/main.js is a stand-in that reports its heap limit and the signals it gets: the real one would
 * need a build, and a build here would rewrite the dist/ that other tests run.
 *
 * The growing factor V8 applied and the packages the entry point loaded are read from the real
 * process, through a test-only preload that acts on SIGUSR2 (a full GC; a list of its module cache).
 */

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createGateway, type GatewayHandle } from '../../src/gateway/server.js';
import { type PetstoreHandle, startPetstore } from '../../src/petstore/start.js';
import {
  checkedPid,
  descendants,
  type Exit,
  freePort,
  killTree,
  type Started,
  startUntil,
  trackedEnv,
  waitGone,
} from '../helpers/processes.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';
import { TEST_KEY } from '../helpers/start-stack.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = ['--import', 'tsx', 'src/main.ts'];
const READY = /Pet Store GraphQL gateway ready at (\S+)/;

interface Finished extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the entry point with only `env` (and PATH) until it exits; killed, and failing, after `ms`. */
async function runToExit(env: Record<string, string>, ms = 30_000): Promise<Finished> {
  const child = spawn(process.execPath, MAIN, {
    cwd: ROOT,
    env: trackedEnv({ PATH: process.env.PATH ?? '', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = checkedPid(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // 'close' rather than 'exit': every byte written to the pipes has been read by then.
  const closed = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  const outcome = await Promise.race([closed, timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    await killTree(pid);
    throw new Error(`src/main.ts still running after ${ms} ms:\n${stdout}${stderr}`);
  }
  return { ...outcome, stdout, stderr };
}

/** stderr as lines, without the empty one after the last newline. */
function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

function expectOneLineFailure(run: Finished, names: RegExp): void {
  expect(run.code).toBe(1);
  expect(lines(run.stderr)).toHaveLength(1);
  expect(run.stderr).toMatch(names);
  expect(run.stderr).toMatch(/^gateway: /);
  expect(`${run.stdout}${run.stderr}`).not.toMatch(/\n\s+at |Error:/);
}

describe('start-up errors of src/main.ts', () => {
  let occupier: Server | undefined;
  let started: Started | undefined;

  afterEach(async () => {
    if (started !== undefined) await killTree(started.pid);
    started = undefined;
    await new Promise<void>((resolve) => (occupier ? occupier.close(() => resolve()) : resolve()));
    occupier = undefined;
  });

  it('says in one line that PORT is in use, and exits 1 without a stack trace', async () => {
    const server = createServer();
    occupier = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const run = await runToExit({ PORT: String(port), HOST: '127.0.0.1' });
    expectOneLineFailure(run, new RegExp(`PORT ${port} on HOST 127\\.0\\.0\\.1 is already in use`));
  });

  it('reports a bad setting before loading the gateway (Apollo Server, pino, undici): at once, not seconds later', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'petstore-loaded-'));
    try {
      // A test-only preload that lists, at exit, the CommonJS modules the process loaded.
      const preload = join(folder, 'loaded.cjs');
      await writeFile(
        preload,
        "process.on('exit', () => console.log('loaded ' + JSON.stringify(Object.keys(require.cache))));\n",
      );
      const run = spawnSync(process.execPath, ['--require', preload, ...MAIN], {
        cwd: ROOT,
        env: trackedEnv({ PATH: process.env.PATH ?? '', PORT: 'abc' }),
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toBe('gateway: PORT must be an integer from 0 to 65535\n');
      const loaded = JSON.parse(/^loaded (\[.*\])$/m.exec(run.stdout)?.[1] ?? 'null') as string[];
      expect(loaded.filter((path) => /node_modules\/(pino|undici|@apollo|graphql)\//.test(path))).toEqual([]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('refuses NODE_ENV=production without PETSTORE_BASE_URL in one line, exit 1', async () => {
    const run = await runToExit({ PORT: '0', NODE_ENV: 'production' });
    expectOneLineFailure(run, /NODE_ENV=production needs PETSTORE_BASE_URL .*PETSTORE_DEMO=true/);
  });

  it('starts the demo store under NODE_ENV=production when PETSTORE_DEMO=true says so', async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', NODE_ENV: 'production', PETSTORE_DEMO: 'true' },
      ready: READY,
      timeoutMs: 30_000,
    });
    const url = started.ready[1] as string;
    expect((await fetch(new URL('/ready', url))).status).toBe(200);
    expect(started.output()).toContain('the embedded reference Pet Store');
  });

  it('says in one line that REDIS_URL does not answer, and exits 1', async () => {
    const port = await freePort();
    const run = await runToExit({ PORT: '0', REDIS_URL: `redis://127.0.0.1:${port}` });
    expectOneLineFailure(run, /REDIS_URL did not answer within 3 s at start/);
    expect(run.stdout).not.toMatch(READY);
  });

  it('starts with an upstream that does not answer, and says so in one line naming PETSTORE_BASE_URL', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}/v1`;
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', PETSTORE_BASE_URL: base, PETSTORE_API_KEY: TEST_KEY },
      ready: /PETSTORE_BASE_URL .*\n/,
      timeoutMs: 30_000,
    });
    const said = lines(started.output()).filter((line) => line.includes('PETSTORE_BASE_URL'));
    expect(said).toEqual([
      `Upstream: PETSTORE_BASE_URL ${base} refused the connection; requests answer UPSTREAM_UNAVAILABLE until it does`,
    ]);
    const url = READY.exec(started.output())?.[1] as string;
    expect((await fetch(new URL('/ready', url))).status).toBe(200);
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ pets(first: 1) { nodes { id } } }' }),
    });
    const body = (await answer.json()) as { errors?: { extensions?: { code?: string } }[] };
    expect(body.errors?.[0]?.extensions?.code).toBe('UPSTREAM_UNAVAILABLE');
  });
});

describe('/ready while start-up waits for Redis', () => {
  let redis: RedisServer | undefined;
  let stoppedPid: number | undefined;
  let store: PetstoreHandle | undefined;
  let gateway: Promise<GatewayHandle> | undefined;

  beforeAll(async () => {
    redis = await startRedis();
    store = await startPetstore({ keys: { [TEST_KEY]: { perMinute: 100_000, perDay: 1_000_000 } } });
  });
  afterAll(async () => {
    // Resumed before it is stopped, whatever happened: a stopped process holds its port and ignores SIGTERM.
    if (stoppedPid !== undefined) process.kill(checkedPid(stoppedPid), 'SIGCONT');
    await gateway?.then((handle) => handle.close()).catch(() => {});
    await store?.close();
    await redis?.stop();
  });

  it('answers 503 while Redis is stopped, and 200 once it answers and start-up is done', async () => {
    const port = await freePort();
    const config = parseConfig({
      PORT: String(port),
      PETSTORE_BASE_URL: (store as PetstoreHandle).url,
      PETSTORE_API_KEY: TEST_KEY,
      REDIS_URL: (redis as RedisServer).url,
      LOG_LEVEL: 'silent',
    });
    stoppedPid = checkedPid((redis as RedisServer).pid);
    process.kill(stoppedPid, 'SIGSTOP');
    gateway = createGateway(config, { host: '127.0.0.1', redisPrefix: `startup-${process.pid}` });
    const settled = gateway.then(
      () => 'started',
      (error: Error) => `failed: ${error.message}`,
    );
    const ready = `http://127.0.0.1:${port}/ready`;

    // Listening comes first: /ready answers while Redis has not, and says 503.
    const whileStopped = await pollStatus(ready, (status) => status !== undefined, 2_500);
    expect(whileStopped).toBe(503);
    expect(await Promise.race([settled, delay(0).then(() => 'pending')])).toBe('pending');
    const graphql = await fetch(`http://127.0.0.1:${port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(graphql.status).toBe(503);
    expect(graphql.headers.get('retry-after')).toBe('1');
    // Liveness is not readiness: the process is alive while it waits.
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);

    process.kill(stoppedPid, 'SIGCONT');
    stoppedPid = undefined;
    expect(await settled).toBe('started');
    expect(await pollStatus(ready, (status) => status === 200, 5_000)).toBe(200);
  });
});

/** Polls `url` until `done(status)` or `ms` pass; the last status seen (undefined: no answer). */
async function pollStatus(
  url: string,
  done: (status: number | undefined) => boolean,
  ms: number,
): Promise<number | undefined> {
  const deadline = Date.now() + ms;
  let status: number | undefined;
  do {
    status = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.status,
      () => undefined,
    );
    if (done(status)) return status;
    await delay(20);
  } while (Date.now() < deadline);
  return status;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

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

  it('caps the V8 heap at 256 MB and the young generation at 32 MB semi-spaces, and a NODE_OPTIONS of the caller overrides them', async () => {
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
    expect(Number(started.ready[1])).toBe(limitWith('--max-old-space-size=256', '--max-semi-space-size=32'));
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
