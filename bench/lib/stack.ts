/**
 * What the in-process benches (economy, limits' overload) run: the reference store on port 0, which
 * records every request it serves, replicas of the gateway in front of it, a GraphQL POST over real
 * HTTP, and a redis-server of their own on a free port, stopped by its pid.
 */

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, setGlobalDispatcher } from 'undici';
import { parseConfig } from '../../src/config.js';
import { createGateway, type GatewayHandle } from '../../src/gateway/server.js';
import type { RequestRecord } from '../../src/petstore/app.js';
import { startPetstore } from '../../src/petstore/start.js';
import type { Pet } from '../../src/petstore/store.js';
import { freePort, stop } from './processes.js';

export const KEY = 'bench-key';

export interface StackOptions {
  readonly seed?: Pet[];
  readonly storeDelayMs?: number;
  readonly replicas?: number;
  /** The key's limit per store window, and that window (default: none reached). */
  readonly perWindow?: number;
  readonly windowMs?: number;
}

/** Rate limits off unless `env` says otherwise; replicas share `REDIS_URL` when given. */
export async function stack(env: Record<string, string>, options: StackOptions = {}) {
  const records: RequestRecord[] = [];
  const store = await startPetstore({
    keys: { [KEY]: { perMinute: options.perWindow ?? 1e9, perDay: 1e12 } },
    minuteMs: options.windowMs ?? 60_000,
    ...(options.seed ? { seed: options.seed } : {}),
    responseDelayMs: options.storeDelayMs ?? 0,
    onRequest: (record) => records.push(record),
  });
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: store.url,
    PETSTORE_API_KEY: KEY,
    PETSTORE_RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const redisPrefix = `bench-${process.pid}-${Date.now()}`;
  const gateways: GatewayHandle[] = [];
  for (let i = 0; i < (options.replicas ?? 1); i++)
    gateways.push(await createGateway(config, { host: '127.0.0.1', redisPrefix }));
  let next = 0;
  return {
    url: (gateways[0] as GatewayHandle).url,
    /** The replicas' URLs in turn, as a load balancer spreads clients. */
    nextUrl: () => (gateways[next++ % gateways.length] as GatewayHandle).url,
    records,
    async close() {
      for (const gateway of gateways) await gateway.close();
      await store.close();
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

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
