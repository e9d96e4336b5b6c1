/**
 * Credentials in each Redis mode: one server, a Cluster (3+3) and Sentinel (primary, replica, 3
 * sentinels), real redis-server processes on free ports stopped by their pids, each given a password
 * once running (CONFIG SET requirepass and masterauth; the sentinels told with SENTINEL SET auth-pass).
 * With REDIS_PASSWORD the budget store reaches Redis and agrees on the cursor secret; without it, or
 * with a wrong one, the gateway refuses to start, saying what Redis answered (NOAUTH, WRONGPASS) and
 * never the password. TLS is not exercised here (it needs certificates made for the test).
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, type RedisTarget } from '../../src/config.js';
import { createLogger } from '../../src/gateway/observability/logger.js';
import { createGateway } from '../../src/gateway/server.js';
import { SharedBudgetStore } from '../../src/gateway/upstream/limits/shared-budget.js';
import { createRedisConnection } from '../../src/gateway/upstream/redis/connection.js';
import { type RedisHa, type RedisServer, startRedis, startRedisCluster, startRedisSentinel } from '../helpers/redis.js';

const run = promisify(execFile);
const PASSWORD = 'a-test-password-of-some-length';
const cli = async (port: number, ...args: string[]) =>
  (await run('redis-cli', ['-p', String(port), '--no-auth-warning', ...args], { timeout: 5_000 })).stdout.trim();

/** The ACL docs/operations.md gives a gateway's user (after `ACL SETUSER gateway`). */
const DOCUMENTED_ACL = [
  'on',
  `>${PASSWORD}`,
  '~petstore-gateway:*',
  '~auth*',
  '&petstore-gateway:*',
  '&auth*',
  '+@read',
  '+@write',
  '+@scripting',
  '+@pubsub',
  '+@connection',
  '+info',
  '+cluster|slots',
  '+cluster|info',
];

let single: RedisServer;
let cluster: RedisHa;
let sentinel: RedisHa;

beforeAll(async () => {
  // Each kept as it starts: if one fails, afterAll still stops the others.
  await Promise.all([
    startRedis().then((started) => (single = started)),
    startRedisCluster().then((started) => (cluster = started)),
    startRedisSentinel().then((started) => (sentinel = started)),
  ]);
  await cli(single.port, 'CONFIG', 'SET', 'requirepass', PASSWORD);
  for (const port of [...cluster.dataPorts, ...sentinel.dataPorts]) {
    await cli(port, 'CONFIG', 'SET', 'masterauth', PASSWORD);
    await cli(port, 'CONFIG', 'SET', 'requirepass', PASSWORD);
  }
  // Two ACL users on every data node: one as docs/operations.md has it, one that may not run scripts.
  for (const port of [single.port, ...cluster.dataPorts, ...sentinel.dataPorts]) {
    await cli(port, '-a', PASSWORD, 'ACL', 'SETUSER', 'gateway', ...DOCUMENTED_ACL);
    await cli(
      port,
      '-a',
      PASSWORD,
      'ACL',
      'SETUSER',
      'noscripts',
      'on',
      `>${PASSWORD}`,
      '~*',
      '&*',
      '+@all',
      '-@scripting',
    );
  }
  for (const address of (sentinel.env.REDIS_SENTINELS as string).split(',')) {
    await cli(Number(address.split(':')[1]), 'SENTINEL', 'SET', 'gateway', 'auth-pass', PASSWORD);
  }
}, 90_000);
afterAll(async () => {
  await Promise.all([single?.stop(), cluster?.close(), sentinel?.close()]);
});

/** Whether a budget store on `env` reaches Redis (its first beat, a script) within 3 s. */
async function reaches(env: Record<string, string>): Promise<boolean> {
  const connection = createRedisConnection(parseConfig(env).redis as RedisTarget);
  const store = new SharedBudgetStore({
    client: connection.client,
    prefix: 'auth',
    plan: { windows: [{ count: 10, windowMs: 1_000 }], share: 1 },
    now: () => Date.now(),
    logger: createLogger('silent'),
    inflightMs: 60_000,
  });
  try {
    await store.ready();
    return !store.degraded;
  } finally {
    await store.close();
    connection.close();
  }
}

/** The one line a gateway on `env` refuses to start with (a ConfigError, as main.ts prints it). */
async function refusal(env: Record<string, string>): Promise<string> {
  const config = parseConfig({ PORT: '0', PETSTORE_BASE_URL: 'http://127.0.0.1:9/v1', LOG_LEVEL: 'silent', ...env });
  const started = await createGateway(config, { host: '127.0.0.1', redisPrefix: 'auth-refusal' }).then(
    async (gateway) => {
      await gateway.close();
      return 'started';
    },
    (error: unknown) => error,
  );
  expect(started).toBeInstanceOf(ConfigError);
  return (started as ConfigError).message;
}

describe.each([
  ['one server', 'REDIS_URL', () => ({ REDIS_URL: single.url })],
  ['a Redis Cluster', 'REDIS_CLUSTER_NODES', () => cluster.env],
  ['Redis behind Sentinel', 'REDIS_SENTINELS', () => sentinel.env],
])('Redis credentials on %s', (_mode, variable, env) => {
  it('reach Redis with REDIS_PASSWORD, and not without it', async () => {
    expect(await reaches({ ...env(), REDIS_PASSWORD: PASSWORD })).toBe(true);
    expect(await reaches(env())).toBe(false);
  }, 20_000);

  it('refuse to start without the password, or with a wrong one, saying what Redis answered and not the password', async () => {
    const wrong = 'not-the-password-of-this-redis';
    const [missing, mistaken] = await Promise.all([refusal(env()), refusal({ ...env(), REDIS_PASSWORD: wrong })]);
    expect(missing).toBe(
      `${variable}: Redis answered "NOAUTH Authentication required." at start; check REDIS_USERNAME and REDIS_PASSWORD`,
    );
    expect(mistaken).toBe(
      `${variable}: Redis answered "WRONGPASS invalid username-password pair or user is disabled." at start; check REDIS_USERNAME and REDIS_PASSWORD`,
    );
    expect(mistaken).not.toContain(wrong);
  }, 20_000);

  it('reach Redis as an ACL user with the rights docs/operations.md lists; refuse to start, quoting NOPERM, without them', async () => {
    expect(await reaches({ ...env(), REDIS_USERNAME: 'gateway', REDIS_PASSWORD: PASSWORD })).toBe(true);
    const refused = await refusal({ ...env(), REDIS_USERNAME: 'noscripts', REDIS_PASSWORD: PASSWORD });
    expect(refused).toMatch(
      new RegExp(
        `^${variable}: Redis answered "NOPERM .*" at start; the user's ACL forbids a command the gateway runs`,
      ),
    );
    expect(refused).not.toContain(PASSWORD);
  }, 20_000);
});
