/**
 * This project's servers for the load benches: the reference store, and the gateway as `npm start`
 * runs it (`node --max-old-space-size=256 dist/main.js`) pinned to a core, or another build's, or on
 * another Node.
 */

import { fileURLToPath } from 'node:url';
import { demoCatalogue } from '../../src/petstore/seed.js';
import { startPetstore } from '../../src/petstore/start.js';
import { pinned } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The store's key (limits no run reaches); not a secret. */
export const BENCH_KEY = 'k';

/**
 * The reference store with the demo catalogue (121 pets) and BENCH_KEY, in this process (pinned with
 * it to the load core), counting the requests it serves and how many were not 200.
 */
export async function startStore() {
  const counts = { requests: 0, notOk: 0 };
  const store = await startPetstore({
    keys: { [BENCH_KEY]: { perMinute: 1e9, perDay: 1e12 } },
    seed: demoCatalogue(),
    onRequest: (record) => {
      counts.requests++;
      if (record.status !== 200) counts.notOk++;
    },
  });
  return { url: store.url, pid: process.pid, counts: () => ({ ...counts }), close: store.close };
}

export interface GatewayOptions {
  /** Environment settings on top of the bench's (rate limits off, the store and its key). */
  readonly settings?: Record<string, string>;
  /** Flags after the heap cap of `npm start` (the profiler's). */
  readonly nodeArgs?: readonly string[];
  /** The node binary (another Node line, for bench:memory). */
  readonly node?: string;
  /** The checkout whose dist/main.js runs (another build's, for bench:limits' baseline). */
  readonly root?: string;
}

/** The gateway in front of `storeUrl`, pinned to `core`, once it prints its ready line. */
export async function startGateway(core: string, storeUrl: string, options: GatewayOptions = {}) {
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
      out = (out + chunk.toString('utf8')).slice(-2000);
      const ready = / ready at (\S+)/.exec(out)?.[1];
      if (ready) resolve(ready);
    });
  });
  return { child, url, pid: child.pid as number };
}
