/**
 * The peers bench:throughput compares the gateway with, each installed on demand into its own folder
 * (npm run bench:tailcall:setup, bench:mesh:setup; never a dependency of the project), started
 * pinned to the server core in front of the bench's store: Tailcall 1.0.0 on a config written here,
 * GraphQL Mesh v1 with Hive Gateway on a supergraph composed here.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, pinned } from './processes.js';

const BENCH = fileURLToPath(new URL('..', import.meta.url));
const MESH_DIR = join(BENCH, 'mesh');
const HIVE_BIN = join(MESH_DIR, 'node_modules/.bin/hive-gateway');
const TAILCALL_BIN = join(BENCH, 'tailcall/node_modules/@tailcallhq/core-linux-x64-gnu/bin/tailcall');

export type Peer = { readonly url: string; readonly pid: number; readonly log: string };

/** No usage tracking, and a scratch HOME and cache: no update check, nothing written to the user's home. */
const tailcallEnv = (dir: string) => ({ PATH: process.env.PATH, TC_TRACKER: 'false', ...home(dir) });
const home = (dir: string) => ({ HOME: dir, XDG_CACHE_HOME: dir, XDG_CONFIG_HOME: dir });

/** Why Tailcall cannot run here (one line), or undefined. */
export function tailcallSkipped(dir: string): string | undefined {
  if (!existsSync(TAILCALL_BIN))
    return 'Tailcall: skipped, bench/tailcall is not set up (npm run bench:tailcall:setup).';
  try {
    execFileSync(TAILCALL_BIN, ['--version'], { env: tailcallEnv(dir), stdio: 'pipe' });
    return undefined;
  } catch (error) {
    const reason = String((error as { stderr?: unknown }).stderr ?? error).split('\n')[0];
    return `Tailcall: skipped, its binary does not start here (${reason}).`;
  }
}

/**
 * Tailcall 1.0.0 serving `pets(limit, status, after): [Pet]` from `GET {storeUrl}/pets`, with its
 * defaults (no HTTP cache, JIT execution, no query validation) but for loopback, one worker (it has
 * one core), an idle pool as large as the gateway's (32), and `dedupe` on the @http field: identical
 * upstream calls in flight made once.
 */
export async function startTailcall(core: string, storeUrl: string, key: string, dedupe: boolean, dir: string) {
  const port = await freePort();
  const name = dedupe ? 'tailcall-dedupe' : 'tailcall';
  const config = join(dir, `${name}.graphql`);
  writeFileSync(
    config,
    `schema @server(hostname: "127.0.0.1", port: ${port}, workers: 1) @upstream(poolMaxIdlePerHost: 32) {
  query: Query
}
type Query {
  pets(limit: Int, status: String, after: String): [Pet]
    @http(
      url: ${JSON.stringify(`${storeUrl}/pets`)}
      headers: [{key: "Authorization", value: ${JSON.stringify(`Bearer ${key}`)}}]
      query: [
        {key: "limit", value: "{{.args.limit}}", skipEmpty: true}
        {key: "status", value: "{{.args.status}}", skipEmpty: true}
        {key: "after", value: "{{.args.after}}", skipEmpty: true}
      ]
      dedupe: ${dedupe}
    )
}
type Pet { id: ID! name: String! status: String }
`,
  );
  const log = join(dir, `${name}.log`);
  const out = openSync(log, 'a');
  const child = pinned(core, TAILCALL_BIN, ['start', config], {
    cwd: dir,
    env: tailcallEnv(dir),
    stdio: ['ignore', out, out],
  });
  return { url: `http://127.0.0.1:${port}/graphql`, pid: child.pid as number, log } satisfies Peer;
}

/** Why Mesh cannot run, or undefined when bench/mesh is set up. */
export const meshSkipped = (): string | undefined =>
  existsSync(HIVE_BIN)
    ? undefined
    : 'Mesh: skipped, bench/mesh is not set up (npm run bench:mesh:setup, about 1 minute).';

/** Composes a supergraph against `storeUrl` and starts Hive Gateway on it, one process, pinned to `core`. */
export async function startMesh(core: string, storeUrl: string, key: string, dir: string): Promise<Peer> {
  const supergraph = join(dir, 'supergraph.graphql');
  const compose = join(MESH_DIR, 'node_modules/.bin/mesh-compose');
  execFileSync(compose, ['-o', supergraph], { cwd: MESH_DIR, env: { ...process.env, PETSTORE_URL: storeUrl } });
  const port = await freePort();
  // cwd is the scratch folder, so Hive Gateway serves the supergraph alone (not mesh.config.ts).
  const args = [HIVE_BIN, 'supergraph', supergraph, '--port', String(port), '--host', '127.0.0.1', '--fork', '1'];
  const env = { ...process.env, NODE_ENV: 'production', TOKEN: key };
  const log = join(dir, 'hive-gateway.log');
  const out = openSync(log, 'a');
  const hive = pinned(core, process.execPath, args, { cwd: dir, env, stdio: ['ignore', out, out] });
  return { url: `http://127.0.0.1:${port}/graphql`, pid: hive.pid as number, log };
}
