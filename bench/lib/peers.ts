/**
 * The peers `npm run bench:throughput` compares the gateway with, each installed on demand into its
 * own folder under bench/ (never a dependency of the project) and started pinned to the server core,
 * listening on loopback only, in front of the store the bench started:
 *
 *   Tailcall 1.0.0 (Rust)           bench/tailcall/setup.sh; the bench writes its config per store
 *   GraphQL Mesh v1 + Hive Gateway  bench/mesh/setup.sh; the bench composes a supergraph per store
 */

import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, logTo, pinned } from './processes.js';

const BENCH = fileURLToPath(new URL('..', import.meta.url));
const MESH_DIR = join(BENCH, 'mesh');
const HIVE_BIN = join(MESH_DIR, 'node_modules/.bin/hive-gateway');
const COMPOSE_BIN = join(MESH_DIR, 'node_modules/.bin/mesh-compose');
const TAILCALL_BIN = join(BENCH, 'tailcall/node_modules/@tailcallhq/core-linux-x64-gnu/bin/tailcall');

export interface Peer {
  readonly child: ChildProcess;
  readonly url: string;
  readonly pid: number;
  readonly log: string;
}

/** Tailcall's version line, or why it cannot run here (one line); `dir` is a scratch folder. */
export function tailcallVersion(dir: string): { version: string } | { skipped: string } {
  if (!existsSync(TAILCALL_BIN)) {
    return { skipped: 'Tailcall: skipped, bench/tailcall is not set up (npm run bench:tailcall:setup installs it).' };
  }
  try {
    const out = execFileSync(TAILCALL_BIN, ['--version'], { env: tailcallEnv(dir), encoding: 'utf8' });
    return { version: out.trim() };
  } catch (error) {
    const reason = String((error as { stderr?: unknown }).stderr ?? error).split('\n')[0];
    return { skipped: `Tailcall: skipped, bench/tailcall's binary does not start here (${reason}).` };
  }
}

/**
 * Tailcall's environment: no usage tracking (TC_TRACKER=false), and a scratch HOME and cache so its
 * update check (which only looks after a day has passed since the first run it remembers) never
 * reaches for the network, and nothing is written to the user's home.
 */
function tailcallEnv(dir: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, TC_TRACKER: 'false', HOME: dir, XDG_CACHE_HOME: dir, XDG_CONFIG_HOME: dir };
}

/**
 * A Tailcall 1.0.0 config serving `pets(limit, status, after): [Pet]` from `GET {storeUrl}/pets`.
 * Defaults left as they are, as read in its source at the v1.0.0 tag: no HTTP cache (httpCache 0),
 * JIT execution on, query and response validation off. Set here: loopback only, one worker (it
 * has one core), an idle pool as large as the gateway's (32), and `dedupe` on the one @http field
 * (in 1.0.0 an argument of @http, not of @upstream): identical upstream calls in flight are made once.
 */
export function tailcallConfig(options: { port: number; storeUrl: string; key: string; dedupe: boolean }): string {
  return `schema
  @server(hostname: "127.0.0.1", port: ${options.port}, workers: 1)
  @upstream(poolMaxIdlePerHost: 32) {
  query: Query
}

type Query {
  pets(limit: Int, status: String, after: String): [Pet]
    @http(
      url: ${JSON.stringify(`${options.storeUrl}/pets`)}
      headers: [{key: "Authorization", value: ${JSON.stringify(`Bearer ${options.key}`)}}]
      query: [
        {key: "limit", value: "{{.args.limit}}", skipEmpty: true}
        {key: "status", value: "{{.args.status}}", skipEmpty: true}
        {key: "after", value: "{{.args.after}}", skipEmpty: true}
      ]
      dedupe: ${options.dedupe}
    )
}

type Pet {
  id: ID!
  name: String!
  status: String
}
`;
}

/** Writes a config for `storeUrl` into `dir` and starts Tailcall on it, pinned to `core`. */
export async function startTailcall(
  core: string,
  storeUrl: string,
  key: string,
  dedupe: boolean,
  dir: string,
): Promise<Peer> {
  const port = await freePort();
  const name = dedupe ? 'tailcall-dedupe' : 'tailcall';
  const config = join(dir, `${name}.graphql`);
  writeFileSync(config, tailcallConfig({ port, storeUrl, key, dedupe }));
  const child = pinned(core, TAILCALL_BIN, ['start', config], {
    cwd: dir,
    env: tailcallEnv(dir),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = join(dir, `${name}.log`);
  logTo(child, log);
  return { child, url: `http://127.0.0.1:${port}/graphql`, pid: child.pid as number, log };
}

/** Why Mesh cannot run, or undefined when bench/mesh is set up. */
export function meshSkipped(): string | undefined {
  return existsSync(HIVE_BIN)
    ? undefined
    : 'Mesh / Hive Gateway: skipped, bench/mesh is not set up (npm run bench:mesh:setup installs it, about 1 minute).';
}

/** Composes a supergraph against `storeUrl` and starts Hive Gateway on it, one process, pinned to `core`. */
export async function startMesh(core: string, storeUrl: string, key: string, dir: string): Promise<Peer> {
  const supergraph = join(dir, 'supergraph.graphql');
  execFileSync(COMPOSE_BIN, ['-o', supergraph], {
    cwd: MESH_DIR,
    env: { ...process.env, PETSTORE_URL: storeUrl },
    stdio: 'ignore',
  });
  const port = await freePort();
  // cwd is the scratch folder, so Hive Gateway serves the supergraph alone (bench/mesh/mesh.config.ts
  // would be picked up as its config file).
  const hive = pinned(
    core,
    process.execPath,
    [HIVE_BIN, 'supergraph', supergraph, '--port', String(port), '--host', '127.0.0.1', '--fork', '1'],
    { cwd: dir, env: { ...process.env, NODE_ENV: 'production', TOKEN: key }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log = join(dir, 'hive-gateway.log');
  logTo(hive, log);
  return { child: hive, url: `http://127.0.0.1:${port}/graphql`, pid: hive.pid as number, log };
}
