/**
 * One real redis-server for a test file, reached directly and through a TCP proxy a test can cut (a
 * partition between one replica and Redis: see tcp-proxy.ts), with what each test opened closed
 * after it, last opened first. Registers the vitest hooks itself.
 */

import { afterAll, afterEach, beforeAll } from 'vitest';
import { type RedisServer, startRedis } from './redis.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export interface RedisBehindProxy {
  readonly redis: RedisServer;
  readonly proxy: TcpProxy;
  /** Run after the current test, in reverse order. */
  readonly closers: (() => Promise<void>)[];
}

export function redisBehindProxy(): RedisBehindProxy {
  let redis: RedisServer | undefined;
  let proxy: TcpProxy | undefined;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    proxy = await startTcpProxy({ port: redis.port });
  });
  afterAll(async () => {
    await proxy?.close();
    await redis?.stop();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return {
    get redis() {
      if (redis === undefined) throw new Error('redis is started in beforeAll');
      return redis;
    },
    get proxy() {
      if (proxy === undefined) throw new Error('the proxy is started in beforeAll');
      return proxy;
    },
    closers,
  };
}
