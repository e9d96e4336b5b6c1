/**
 * This project's servers for the load benches, each a process pinned to a core: the reference store
 * (bench/store.ts, which counts the requests it serves) and the gateway as `npm start` runs it
 * (`node --max-old-space-size=256 dist/main.js`), or another build or Node with other flags.
 */

import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pinned } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The store's key (limits no run reaches); not a secret. */
export const BENCH_KEY = 'k';

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly pid: number;
}

/** The reference store with the demo catalogue (121 pets) and BENCH_KEY, pinned to `core`. */
export async function startStore(core: string): Promise<Served> {
  const child = pinned(core, process.execPath, ['--import', 'tsx', 'bench/store.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the store exited with ${code}`)));
    child.on('message', (message: { type?: string; url?: string }) => {
      if (message?.type === 'ready' && message.url) resolve(message.url);
    });
  });
  return { child, url, pid: child.pid as number };
}

/** Requests the store has answered since it started, and of those the ones that were not 200. */
export function storeCounts(store: ChildProcess): Promise<{ requests: number; notOk: number }> {
  return new Promise((resolve) => {
    const onMessage = (message: { type?: string; requests: number; notOk: number }): void => {
      if (message?.type !== 'count') return;
      store.off('message', onMessage);
      resolve(message);
    };
    store.on('message', onMessage);
    store.send({ type: 'count' });
  });
}

export interface GatewayOptions {
  /** Environment settings on top of the bench's (rate limits off, the store, its key). */
  readonly settings?: Record<string, string>;
  /** Flags before the entry point (the profiler's); the heap cap of `npm start` comes first. */
  readonly nodeArgs?: readonly string[];
  /** The node binary (another Node line, for bench:memory). */
  readonly node?: string;
  /** The checkout whose dist/main.js runs (another build's, for bench:limits' baseline). */
  readonly root?: string;
}

/** The gateway in front of `storeUrl`, pinned to `core`, once it prints its ready line. */
export async function startGateway(core: string, storeUrl: string, options: GatewayOptions = {}): Promise<Served> {
  const args = ['--max-old-space-size=256', ...(options.nodeArgs ?? []), 'dist/main.js'];
  const child = pinned(core, options.node ?? process.execPath, args, {
    cwd: options.root ?? ROOT,
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
      ...options.settings,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
