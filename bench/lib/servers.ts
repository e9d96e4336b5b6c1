/**
 * This project's servers for `npm run bench:throughput`, each a bench/throughput-child.ts process
 * pinned to a core and talking to the bench over an IPC channel: the reference store (which also
 * counts the requests it serves) and the gateway.
 */

import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pinned } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('../throughput-child.ts', import.meta.url));

/** The store's key (limits no run reaches); not a secret. */
export const BENCH_KEY = 'k';

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly pid: number;
}

/** Starts a throughput-child.ts server pinned to `core` and waits for its URL. */
async function startChild(core: string, args: string[]): Promise<Served> {
  const child = pinned(core, process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    // As deployed, and as Hive Gateway runs here: graphql-js skips its development checks.
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
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

/** The gateway in front of `storeUrl`, rate limits off, plus `settings` (environment names and values). */
export const startGateway = (core: string, storeUrl: string, settings: Record<string, string> = {}): Promise<Served> =>
  startChild(core, ['gateway', storeUrl, ...Object.entries(settings).map(([name, value]) => `${name}=${value}`)]);

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
