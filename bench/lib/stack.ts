/**
 * The in-process benches' stack (economy, limits' overload): the reference store on port 0, which
 * records every request it serves, and replicas of the gateway in front of it, all on loopback.
 */

import { parseConfig } from '../../src/config.js';
import { createGateway, type GatewayHandle } from '../../src/gateway/server.js';
import type { RequestRecord } from '../../src/petstore/app.js';
import { startPetstore } from '../../src/petstore/start.js';
import type { Pet } from '../../src/petstore/store.js';

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
