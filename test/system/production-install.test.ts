/**
 * The production install, as the container image performs it. No Docker engine runs where this
 * project is tested, so the Dockerfile's own instructions are replayed in order (COPY, RUN, ENV…;
 * test/helpers/dockerfile.ts says what a replay cannot do) on a fresh clone of the committed HEAD,
 * and the result is started the way the image and compose.yaml start it: the reference store with
 * compose's command, the gateway with the image's CMD and ENV, a real redis-server for REDIS_URL.
 * Uncommitted changes are not in the clone: commit before trusting this test locally.
 */

import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, symlink, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../src/config.js';
import { parseDockerfile, type ReplayedStage, replayDockerfile } from '../helpers/dockerfile.js';
import { gql } from '../helpers/gql.js';
import { killTree, type Started, startUntil, waitGone } from '../helpers/processes.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';
import { scratchRoot } from '../helpers/scratch.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const QUERY = '{ pets(first: 3) { nodes { id name } } }';
/** npm ci on a busy 2-core machine has taken a minute; the whole replay stays within a few. */
const RUN_TIMEOUT_MS = 240_000;
const SETUP_TIMEOUT_MS = 420_000;

const exec = promisify(execFile);

interface Compose {
  services: Record<
    string,
    { command?: string[]; environment?: Record<string, string>; deploy?: { replicas?: number } }
  >;
}

/**
 * What a container starts from: no NODE_ENV (vitest sets one), no npm_* variables of the npm that
 * runs the tests, and no node_modules/.bin on PATH. HOME stays, for npm's cache and registry
 * settings, as do proxy settings.
 */
function containerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    const kept =
      ['HOME', 'LANG', 'TMPDIR'].includes(name) ||
      /^(https?_proxy|no_proxy)$/i.test(name) ||
      /^npm_config_(registry|cache|https?_proxy|proxy|noproxy|cafile|strict_ssl)$/i.test(name);
    if (kept && value !== undefined) env[name] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  return env;
}

/** Runs a command to completion; resolves with its exit code, stdout and stderr. */
function runToEnd(command: string, args: readonly string[], cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every package name that some installed package under `nodeModules` depends on. */
async function productionRequirements(nodeModules: string): Promise<Set<string>> {
  const names = new Set<string>();
  const entries = await readdir(nodeModules, { recursive: true });
  for (const entry of entries) {
    if (!entry.endsWith('package.json') || !/(^|\/)(@[^/]+\/)?[^/@]+\/package\.json$/.test(entry)) continue;
    try {
      const manifest = JSON.parse(await readFile(join(nodeModules, entry), 'utf8')) as Record<string, unknown>;
      for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
        for (const name of Object.keys((manifest[field] as Record<string, string> | undefined) ?? {})) names.add(name);
      }
    } catch {}
  }
  return names;
}

describe('production install: the Dockerfile replayed on a fresh clone', () => {
  let work: string;
  let context: string;
  let build: ReplayedStage;
  let runtime: ReplayedStage;
  let compose: Compose;
  const running: Started[] = [];
  let redis: RedisServer | undefined;

  beforeAll(async () => {
    work = await mkdtemp(join(scratchRoot(), 'petstore-production-'));
    // Node looks for packages in every parent folder: one there would hide a package missing here.
    for (let dir = work; dir !== dirname(dir); dir = dirname(dir)) {
      expect(existsSync(join(dirname(dir), 'node_modules')), `${dirname(dir)}/node_modules`).toBe(false);
    }
    context = join(work, 'context');
    const head = (await exec('git', ['rev-parse', 'HEAD'], { cwd: ROOT })).stdout.trim();
    await exec('git', ['clone', '--quiet', '--no-checkout', ROOT, context]);
    await exec('git', ['checkout', '--quiet', head], { cwd: context });

    const stages = parseDockerfile(await readFile(join(context, 'Dockerfile'), 'utf8'));
    [build, runtime] = (await replayDockerfile(stages, {
      context,
      into: join(work, 'stages'),
      // Packages already in npm's cache are taken from it without asking the registry again, as a
      // build cache would; the lockfile's integrity hashes still decide what is installed.
      baseEnv: { ...containerEnv(), npm_config_prefer_offline: 'true' },
      runTimeoutMs: RUN_TIMEOUT_MS,
    })) as [ReplayedStage, ReplayedStage];
    console.info(
      `replayed: ${build.runs.map((step) => `${step.command} (${(step.ms / 1000).toFixed(1)} s)`).join('; ')}`,
    );
    compose = parse(await readFile(join(context, 'compose.yaml'), 'utf8')) as Compose;
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    // Only those still running: an exited child's pid may since belong to another process.
    for (const started of running) {
      if (started.child.exitCode === null && started.child.signalCode === null) await killTree(started.pid);
    }
    await redis?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  }, 30_000);

  it('builds in two stages: npm ci, npm run build and npm prune --omit=dev, as the README says', () => {
    expect([build.name, runtime.name]).toEqual(['build', 'runtime']);
    expect(build.runs.map((step) => step.command.split(' ').slice(0, 3).join(' '))).toEqual([
      'npm ci --no-audit',
      'npm run build',
      'npm prune --omit=dev',
    ]);
  });

  it('installs without a warning: no engine a dependency refuses, no install script allowScripts leaves undecided', () => {
    const install = build.runs[0]?.output ?? '';
    expect(install).toMatch(/added \d+ packages/);
    expect(install.split('\n').filter((line) => /EBADENGINE|install-scripts/.test(line))).toEqual([]);
  });

  it('keeps in the runtime stage only what node dist/main.js reads, and no development dependency', async () => {
    expect((await readdir(runtime.workdir)).sort()).toEqual(['dist', 'node_modules', 'package.json', 'schema']);
    const manifest = JSON.parse(await readFile(join(context, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    // A development dependency may stay only because a production package needs it too
    // (GraphiQL's meros declares @types/node).
    const needed = await productionRequirements(join(runtime.workdir, 'node_modules'));
    const present = Object.keys(manifest.devDependencies).filter(
      (name) => existsSync(join(runtime.workdir, 'node_modules', name)) && !needed.has(name),
    );
    expect(present).toEqual([]);
    for (const tool of ['typescript', 'vitest', '@biomejs/biome', 'playwright-core', 'graphiql', 'react']) {
      expect(existsSync(join(runtime.workdir, 'node_modules', tool)), tool).toBe(false);
    }
    expect(existsSync(join(runtime.workdir, 'node_modules', '.bin', 'tsc'))).toBe(false);
    expect(existsSync(join(runtime.workdir, 'dist', 'main.js'))).toBe(true);
  });

  it('runs as a non-root user, in production mode, exposing the port the gateway defaults to', async () => {
    expect(runtime.user).toBe('node');
    expect(runtime.env.NODE_ENV).toBe('production');
    expect(runtime.expose).toEqual([parseConfig({}).port]);
    // The shell execs node (PID 1 still gets the signals) with npm start's heap flags ahead of the operator's.
    expect(runtime.cmd).toEqual([
      'sh',
      '-c',
      'NODE_OPTIONS="--max-old-space-size=256 --max-semi-space-size=16 $NODE_OPTIONS" exec node dist/main.js',
    ]);
    // The same command as `npm start`, so the two cannot drift apart.
    expect(runtime.cmd?.[2]).toBe(JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).scripts.start);
    expect(runtime.healthcheck?.[0]).toBe('node');
  });

  it('describes three gateway replicas sharing one Redis, in front of the store run from dist/', () => {
    const { gateway, petstore, redis: redisService } = compose.services;
    expect(gateway?.deploy?.replicas).toBe(3);
    expect(gateway?.environment?.REDIS_URL).toBe('redis://redis:6379');
    expect(gateway?.environment?.PETSTORE_BASE_URL).toBe('http://petstore:4010/v1');
    expect(petstore?.command).toEqual(['node', 'dist/petstore/main.js']);
    expect(redisService).toBeDefined();
  });

  it('starts as the image does, serves a query through Redis, passes its HEALTHCHECK and exits 0 on SIGTERM', async () => {
    const gatewayService = compose.services.gateway?.environment ?? {};
    const base = { ...containerEnv(), ...runtime.env };
    redis = await startRedis();
    const store = await startUntil('node', compose.services.petstore?.command?.slice(1) ?? [], {
      cwd: runtime.workdir,
      env: { ...base, ...compose.services.petstore?.environment, HOST: '127.0.0.1', PORT: '0' },
      ready: /Pet Store listening at (\S+)/,
      timeoutMs: 20_000,
    });
    running.push(store);
    const [command, ...args] = runtime.cmd ?? [];
    const gateway = await startUntil(command as string, args, {
      cwd: runtime.workdir,
      env: {
        ...base,
        ...gatewayService,
        PETSTORE_BASE_URL: store.ready[1] as string,
        REDIS_URL: redis.url,
        PORT: '0',
      },
      ready: /Pet Store GraphQL gateway ready at (\S+)/,
      timeoutMs: 20_000,
    });
    running.push(gateway);
    const url = gateway.ready[1] as string;

    const response = await gql(url, QUERY);
    expect(response.status).toBe(200);
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data?.pets.nodes).toHaveLength(3);

    // compose.yaml picks GraphiQL: its files come from dist/, with no graphiql or React package.
    expect(gatewayService.LANDING_PAGE).toBe('graphiql');
    const page = await (await fetch(url, { headers: { accept: 'text/html' } })).text();
    const files = [...page.matchAll(/\b(?:src|href)="(\/graphiql\/[^"]+)"/g)].map((match) => match[1] as string);
    expect(files).toHaveLength(4);
    for (const file of files) {
      const asset = await fetch(new URL(file, url));
      expect(asset.status, file).toBe(200);
      expect((await asset.arrayBuffer()).byteLength, file).toBeGreaterThan(1_000);
    }

    // The HEALTHCHECK command, run as Docker would inside the container (PORT from the environment).
    const [healthCommand, ...healthArgs] = runtime.healthcheck ?? [];
    const health = await runToEnd(healthCommand as string, healthArgs, runtime.workdir, {
      ...base,
      PORT: new URL(url).port,
    });
    expect((await fetch(new URL('/ready', url))).status).toBe(200);
    expect(health.code).toBe(0);

    process.kill(gateway.pid, 'SIGTERM');
    expect(await gateway.exited, gateway.output()).toEqual({ code: 0, signal: null });
    process.kill(store.pid, 'SIGTERM');
    expect(await store.exited, store.output()).toEqual({ code: 0, signal: null });
    await waitGone([gateway.pid, store.pid], 5_000);
  }, 60_000);

  it('lets npm start run the built gateway without TypeScript, and say what to do without dist/', async () => {
    const env = containerEnv();
    // Nothing installed, nothing built: one line saying what to run.
    const bare = await runToEnd('npm', ['run', '--silent', 'prestart'], context, env);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain(
      'npm start: dist/main.js is missing and TypeScript is not installed: run npm ci, then npm run build',
    );
    // After the production steps (the build stage's pruned install and dist/): runs what was built.
    await symlink(join(build.workdir, 'node_modules'), join(context, 'node_modules'));
    await symlink(join(build.workdir, 'dist'), join(context, 'dist'));
    const built = await stat(join(build.workdir, 'dist', 'main.js'));
    const production = await runToEnd('npm', ['run', '--silent', 'prestart'], context, env);
    expect(production).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect((await stat(join(build.workdir, 'dist', 'main.js'))).mtimeMs).toBe(built.mtimeMs);
  }, 30_000);

  it('lets npm start compile first where TypeScript is installed (npm ci && npm start)', async () => {
    const env = containerEnv();
    for (const link of ['node_modules', 'dist']) if (existsSync(join(context, link))) await unlink(join(context, link));
    // A development install of the same lockfile: the one this test runs from.
    await symlink(join(ROOT, 'node_modules'), join(context, 'node_modules'));
    const development = await runToEnd('npm', ['run', '--silent', 'prestart'], context, env);
    expect(development.code, development.stderr).toBe(0);
    expect(existsSync(join(context, 'dist', 'main.js'))).toBe(true);
    // Nothing changed since: the next start runs what was built (scripts/build-inputs.mjs).
    const built = await stat(join(context, 'dist', 'main.js'));
    const again = await runToEnd('npm', ['run', '--silent', 'prestart'], context, env);
    expect(again.code, again.stderr).toBe(0);
    expect((await stat(join(context, 'dist', 'main.js'))).mtimeMs).toBe(built.mtimeMs);
  }, 60_000);
});
