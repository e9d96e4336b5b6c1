/**
 * What the in-process benches (economy, limits) need around the gateway: a GraphQL POST over real
 * HTTP, and a redis-server of their own on a free port, stopped by its pid.
 */

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, setGlobalDispatcher } from 'undici';
import { freePort, stop } from './processes.js';

// fetch's dispatcher is undici's Agent whatever the gateway imports (it loads undici's Pool alone),
// so the benches' clients behave the same from build to build.
setGlobalDispatcher(new Agent());

export interface GqlBody {
  data?: any;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
  extensions?: Record<string, unknown>;
}

export async function gql(
  url: string,
  query: string,
  options: { variables?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: GqlBody }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: response.status, body: JSON.parse(await response.text()) };
}

/** A redis-server on loopback, nothing saved, in a scratch folder; `stop` ends it by its pid. */
export async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bench-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('Ready to accept connections')) resolve();
    });
  });
  child.stdout?.resume();
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      child.removeAllListeners('exit');
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
