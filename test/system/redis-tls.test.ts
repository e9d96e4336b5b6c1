/**
 * TLS and credentials together on one Redis server: the real entry point (`node --import tsx
 * src/main.ts`) given `rediss://` and REDIS_PASSWORD reaches a redis-server that speaks TLS only on
 * that port and requires the password, shares its state there, and says so on /ready. Without the
 * password, or without trusting the server's CA (a certificate made for the test by openssl, trusted
 * through NODE_EXTRA_CA_CERTS), it refuses to start in one line: the certificate is verified. TLS
 * asked of a server without it (or the other way round) is refused in one line saying just that.
 * Behind Sentinel with REDIS_TLS, the sentinels too are reached over TLS (a primary, a replica
 * and 3 sentinels that speak TLS only to clients and to each other). A Cluster takes the same TLS
 * options through the same connection factory; its TLS is not exercised here, its credentials are
 * in redis-auth.test.ts.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineFailure, MAIN, READY, ROOT, runToExit } from '../helpers/entry-point.js';
import { killTree, type Started, startUntil } from '../helpers/processes.js';
import {
  type RedisSentinelTls,
  type RedisServer,
  type RedisTls,
  startRedis,
  startRedisSentinelTls,
  startRedisTls,
} from '../helpers/redis.js';

const PASSWORD = 'a-tls-test-password-of-some-length';
let redis: RedisTls;
/** A Redis without TLS, for rediss:// pointed at the wrong server. */
let plain: RedisServer;
let started: Started | undefined;

beforeAll(async () => {
  await Promise.all([
    startRedisTls(PASSWORD).then((started) => (redis = started)),
    startRedis().then((started) => (plain = started)),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([redis?.close(), plain?.stop()]);
});
afterEach(async () => {
  if (started !== undefined) await killTree(started.pid);
  started = undefined;
});

const env = (extra: Record<string, string>) => ({
  PATH: process.env.PATH ?? '',
  PORT: '0',
  REDIS_URL: `rediss://127.0.0.1:${redis.tlsPort}`,
  ...extra,
});

describe('Redis over TLS with a password (rediss://, REDIS_PASSWORD)', () => {
  it('reaches Redis, shares its state there and says so on /ready', async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: env({ REDIS_PASSWORD: PASSWORD, NODE_EXTRA_CA_CERTS: redis.caFile }),
      ready: READY,
      timeoutMs: 30_000,
    });
    const url = started.ready[1] as string;
    const ready = await fetch(new URL('/ready', url));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ redis: { mode: 'single', reachable: true } });
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ pets(first: 2) { nodes { id } } }' }),
    });
    expect(((await answer.json()) as { data?: unknown }).data).toBeDefined();
    // What it shares (the budget's state, heartbeats, the cursor secret) is in this Redis.
    expect(Number(await redis.cli('DBSIZE'))).toBeGreaterThan(0);
    expect(started.output()).not.toContain(PASSWORD);
  }, 40_000);

  it('refuses to start without the password', async () => {
    expectOneLineFailure(
      await runToExit(env({ NODE_EXTRA_CA_CERTS: redis.caFile })),
      /^gateway: REDIS_URL: Redis answered "NOAUTH Authentication required\." at start; check REDIS_USERNAME and REDIS_PASSWORD$/m,
    );
  }, 40_000);

  it("refuses to start when the server's certificate is not trusted, saying so", async () => {
    const run = await runToExit(env({ REDIS_PASSWORD: PASSWORD }));
    expectOneLineFailure(
      run,
      /^gateway: REDIS_URL: TLS said "self-signed certificate in certificate chain" at start; the server's certificate is not trusted \(NODE_EXTRA_CA_CERTS names a CA to trust\)$/m,
    );
    expect(`${run.stdout}${run.stderr}`).not.toContain(PASSWORD);
  }, 40_000);

  it('refuses to start with rediss:// to a Redis without TLS, saying that is what it is', async () => {
    const run = await runToExit(env({ REDIS_URL: `rediss://127.0.0.1:${plain.port}`, REDIS_PASSWORD: PASSWORD }));
    expectOneLineFailure(
      run,
      new RegExp(
        `^gateway: REDIS_URL: no TLS session with 127\\.0\\.0\\.1:${plain.port} at start: the server there speaks Redis without TLS; use redis:// instead of rediss://, or turn TLS on in Redis$`,
        'm',
      ),
    );
    expect(`${run.stdout}${run.stderr}`).not.toContain(PASSWORD);
  }, 40_000);

  it('refuses to start with redis:// to a port that speaks TLS only, saying so', async () => {
    const run = await runToExit(env({ REDIS_URL: `redis://127.0.0.1:${redis.tlsPort}`, REDIS_PASSWORD: PASSWORD }));
    expectOneLineFailure(
      run,
      new RegExp(
        `^gateway: REDIS_URL: 127\\.0\\.0\\.1:${redis.tlsPort} answered with TLS at start, and the gateway spoke Redis without it; use rediss:// instead of redis://$`,
        'm',
      ),
    );
    expect(`${run.stdout}${run.stderr}`).not.toContain(PASSWORD);
  }, 40_000);
});

describe('Redis behind Sentinel over TLS (REDIS_TLS=true)', () => {
  let sentinel: RedisSentinelTls | undefined;
  beforeAll(async () => {
    sentinel = await startRedisSentinelTls();
  }, 60_000);
  afterAll(async () => {
    await sentinel?.close();
  });

  it('reaches the sentinels and the primary they name over TLS, and shares its state there', async () => {
    const ha = sentinel as RedisSentinelTls;
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', NODE_EXTRA_CA_CERTS: ha.caFile, ...ha.env },
      ready: READY,
      timeoutMs: 30_000,
    });
    const url = started.ready[1] as string;
    const ready = await fetch(new URL('/ready', url));
    expect(await ready.json()).toMatchObject({ redis: { mode: 'sentinel', reachable: true } });
    expect(Number(await ha.cli('DBSIZE'))).toBeGreaterThan(0);
  }, 40_000);
});
