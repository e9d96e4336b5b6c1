/**
 * This project's servers for `npm run bench:throughput`, each a process pinned to a core: the
 * reference store (which also counts the requests it serves) and the two floors, as
 * bench/throughput-child.ts processes talking to the bench over an IPC channel; and the gateway as
 * `npm start` runs it (`node --max-old-space-size=256 dist/main.js`). None runs under tsx, whose
 * loader holds about 55 MB of RSS and shows in profiles: the child is compiled by tsc first
 * (bench/tsconfig.child.json, into bench/.child/), so the floors' CPU and memory are those of
 * plain Node as well, comparable with the gateway's.
 */

import { type ChildProcess, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FloorKind } from './floor.js';
import { pinned } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD_CONFIG = fileURLToPath(new URL('../tsconfig.child.json', import.meta.url));
const CHILD = fileURLToPath(new URL('../.child/bench/throughput-child.js', import.meta.url));

let compiled = false;
/** Compiles bench/throughput-child.ts and what it imports with the project's tsc, once per bench process. */
function compileChild(): void {
  if (compiled) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', CHILD_CONFIG], { cwd: ROOT, stdio: 'inherit' });
  compiled = true;
}

/** The store's key (limits no run reaches); not a secret. */
export const BENCH_KEY = 'k';

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly pid: number;
}

/** Starts a throughput-child.ts server pinned to `core` and waits for its URL; `nodeArgs` and `wrapper` as startGateway's. */
async function startChild(
  core: string,
  args: string[],
  nodeArgs: readonly string[] = [],
  wrapper: readonly string[] = [],
): Promise<Served> {
  compileChild();
  const child = pinned(
    core,
    process.execPath,
    [...nodeArgs, CHILD, ...args],
    {
      cwd: ROOT,
      // As deployed, and as Hive Gateway runs here: graphql-js skips its development checks.
      env: { ...process.env, NODE_ENV: 'production' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
    wrapper,
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`throughput-child ${args.join(' ')} exited with ${code}`)));
    child.on('message', (message: { type?: string; url?: string }) => {
      if (message?.type === 'ready' && message.url) resolve(message.url);
    });
  });
  return { child, url, pid: child.pid as number };
}

/** The reference store with the demo catalogue (121 pets) and BENCH_KEY. */
export const startStore = (core: string): Promise<Served> => startChild(core, ['store']);

/**
 * The gateway in front of `storeUrl`, rate limits off, plus `settings` (environment names and values)
 * and `nodeArgs` (the profiler's flags, which NODE_OPTIONS does not take); `main` is the build's
 * entry point (another build's, for `npm run bench:compare`); `wrapper` runs Node (valgrind, for
 * `npm run bench:instructions`).
 */
export async function startGateway(
  core: string,
  storeUrl: string,
  settings: Record<string, string> = {},
  nodeArgs: readonly string[] = [],
  main = 'dist/main.js',
  wrapper: readonly string[] = [],
): Promise<Served> {
  const child = pinned(
    core,
    process.execPath,
    ['--max-old-space-size=256', ...nodeArgs, main],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: '0',
        PETSTORE_BASE_URL: storeUrl,
        PETSTORE_API_KEY: BENCH_KEY,
        PETSTORE_RATE_LIMITS: 'off',
        LOG_LEVEL: 'warn',
        // Fixed, so every gateway of a run accepts the others' cursors, as replicas do (the mix walks
        // pages through one gateway and replays them on the rest). Not a secret: loopback, bench only.
        CURSOR_SECRET: 'bench-cursors-on-loopback-only',
        ...settings,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
    wrapper,
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.once('exit', (code) => reject(new Error(`the gateway exited with ${code}: ${out.slice(-500)}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const ready = / ready at (\S+)/.exec(out);
      if (ready?.[1]) resolve(ready[1]);
    });
  });
  // Keep reading, or a full pipe would block the gateway's logging.
  child.stdout?.resume();
  return { child, url, pid: child.pid as number };
}

/** A floor of bench/lib/floor.ts in front of `storeUrl`. */
export const startFloorServer = (
  core: string,
  storeUrl: string,
  which: FloorKind = 'floor',
  nodeArgs: readonly string[] = [],
  wrapper: readonly string[] = [],
): Promise<Served> => startChild(core, [which, storeUrl], nodeArgs, wrapper);

export interface StoreCounts {
  /** Requests the store has answered since it started. */
  readonly requests: number;
  /** Of those, the ones that were not 200. */
  readonly notOk: number;
}

export function storeCounts(store: ChildProcess): Promise<StoreCounts> {
  return new Promise((resolve) => {
    const onMessage = (message: { type?: string } & StoreCounts): void => {
      if (message?.type !== 'count') return;
      store.off('message', onMessage);
      resolve({ requests: message.requests, notOk: message.notOk });
    };
    store.on('message', onMessage);
    store.send({ type: 'count' });
  });
}
