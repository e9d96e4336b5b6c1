/**
 * This project's servers for the benches: the reference store in the bench's own process, the built
 * gateway as `npm start` runs it (node with the heap flags of package.json's start script,
 * dist/main.js) pinned to a core, on this Node or on BENCH_NODE (a node binary: another Node line's
 * memory and speed), a redis-server on a free port; and a GraphQL POST over real HTTP.
 */

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RequestRecord } from '../../src/petstore/app.js';
import { demoCatalogue } from '../../src/petstore/seed.js';
import { startPetstore } from '../../src/petstore/start.js';
import type { Pet } from '../../src/petstore/store.js';
import { freePort, LOAD_CORE, pinned, SERVER_CORE, stop } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** `npm start`'s node flags, read from the script itself so the bench cannot drift from it. */
const START_FLAGS: string[] =
  JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')).scripts.start.match(/--max-[\w-]+=\d+/g) ?? [];
/** The node the gateways run on. */
export const GATEWAY_NODE = process.env.BENCH_NODE || process.execPath;
/** The store's key (limits no run reaches); not a secret. */
export const BENCH_KEY = 'k';

/**
 * The reference store in this process (pinned with it to the load core), counting what it serves:
 * the demo catalogue unless `seed`, BENCH_KEY with limits no run reaches unless `perWindow` in
 * `windowMs`; `record` keeps every request (for the benches that count: a load run would fill the heap).
 */
type StoreOptions = {
  seed?: Pet[];
  delayMs?: number;
  perWindow?: number;
  windowMs?: number;
  record?: boolean;
  /** More keys with BENCH_KEY's limits. */
  extraKeys?: readonly string[];
};
export async function startStore(options: StoreOptions = {}) {
  const counts = { requests: 0, notOk: 0 };
  const records: RequestRecord[] = [];
  const store = await startPetstore({
    keys: Object.fromEntries(
      [BENCH_KEY, ...(options.extraKeys ?? [])].map((key) => [
        key,
        { perMinute: options.perWindow ?? 1e9, perDay: 1e12 },
      ]),
    ),
    minuteMs: options.windowMs ?? 60_000,
    seed: options.seed ?? demoCatalogue(),
    responseDelayMs: options.delayMs ?? 0,
    onRequest: (record) => {
      counts.requests++;
      if (record.status !== 200) counts.notOk++;
      if (options.record) records.push(record);
    },
  });
  return { url: store.url, pid: process.pid, records, counts: () => ({ ...counts }), close: store.close };
}

/**
 * The gateway in front of `storeUrl`, pinned to `core`, once it prints its ready line: `settings`
 * on top of the bench's (rate limits off, the store and its key), `nodeArgs` after `npm start`'s.
 */
export async function startGateway(
  core: string,
  storeUrl: string,
  options: { settings?: Record<string, string>; nodeArgs?: string[] } = {},
) {
  const args = [...START_FLAGS, ...(options.nodeArgs ?? []), 'dist/main.js'];
  const child = pinned(core, GATEWAY_NODE, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      ...{ NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', PETSTORE_RATE_LIMITS: 'off' },
      ...{ PETSTORE_BASE_URL: storeUrl, PETSTORE_API_KEY: BENCH_KEY },
      // Fixed, so every gateway of a run accepts the others' cursors, as replicas do (the mix walks
      // pages through one gateway and replays them on the rest). Not a secret: loopback, bench only.
      CURSOR_SECRET: 'bench-cursors-on-loopback-only',
      ...options.settings,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = (await printed(child, / ready at (\S+)/))[1] as string;
  return { child, url, pid: child.pid as number };
}

/** What `child` prints on stdout matching `line`; rejects if it exits first. Its stdout is read on, so it never blocks. */
function printed(child: ChildProcess, line: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.once('exit', (code) => reject(new Error(`${child.spawnfile} exited with ${code}: ${out.slice(-500)}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      out = (out + chunk.toString('utf8')).slice(-2000);
      const match = line.exec(out);
      if (match) resolve(match);
    });
  });
}

/**
 * A store with `replicas` gateways in front of it on the server core (sharing REDIS_URL when
 * `settings` give one), for the benches that count what reaches the upstream.
 */
export async function stack(settings: Record<string, string>, options: StoreOptions & { replicas?: number } = {}) {
  const store = await startStore({ ...options, record: true });
  const gateways: Awaited<ReturnType<typeof startGateway>>[] = [];
  for (let i = 0; i < (options.replicas ?? 1); i++)
    gateways.push(await startGateway(SERVER_CORE, store.url, { settings }));
  let next = 0;
  return {
    url: (gateways[0] as { url: string }).url,
    /** The replicas' URLs in turn, as a load balancer spreads clients. */
    nextUrl: () => (gateways[next++ % gateways.length] as { url: string }).url,
    records: store.records,
    async close() {
      await Promise.all(gateways.map((gateway) => stop(gateway.child)));
      await store.close();
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A GraphQL POST; the answer's JSON as it came. */
export async function gql(
  url: string,
  query: string,
  options: { variables?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: response.status, body: JSON.parse(await response.text()) };
}

/** A redis-server on loopback, nothing saved, in a scratch folder; stopped by its pid, by `stop` or on exit. */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bench-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child = pinned(LOAD_CORE, 'redis-server', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await printed(child, /Ready to accept connections/);
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
