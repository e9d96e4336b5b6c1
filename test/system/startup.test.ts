/**
 * Starting the gateway: the real entry point (`node --import tsx src/main.ts`) refuses a setting a
 * person can fix with exactly one line on stderr naming it, and exit code 1, never a stack trace; an
 * upstream that does not answer is said in one line, and the gateway starts anyway. A Redis setting
 * that names the wrong kind of server is refused saying what the server answered. In process,
 * `/ready` answers 503 while start-up waits for Redis, and 200 once it has answered.
 *
 * The Redis that does not answer is a real redis-server stopped with SIGSTOP: it accepts TCP
 * connections (the kernel does) and answers nothing until SIGCONT, as a hung or overloaded one would.
 */

import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';
import { createGateway, type GatewayHandle } from '../../src/gateway/server.js';
import { type PetstoreHandle, startPetstore } from '../../src/petstore/start.js';
import { expectOneLineFailure, lines, MAIN, READY, ROOT, runToExit } from '../helpers/entry-point.js';
import { checkedPid, freePort, killTree, type Started, startUntil, trackedEnv } from '../helpers/processes.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';
import { TEST_KEY } from '../helpers/start-stack.js';

describe('start-up errors of src/main.ts', () => {
  let occupier: Server | undefined;
  let started: Started | undefined;

  afterEach(async () => {
    if (started !== undefined) await killTree(started.pid);
    started = undefined;
    await new Promise<void>((resolve) => (occupier ? occupier.close(() => resolve()) : resolve()));
    occupier = undefined;
  });

  it('says in one line that PORT is in use, and exits 1 without a stack trace', async () => {
    const server = createServer();
    occupier = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const run = await runToExit({ PORT: String(port), HOST: '127.0.0.1' });
    expectOneLineFailure(run, new RegExp(`PORT ${port} on HOST 127\\.0\\.0\\.1 is already in use`));
  });

  it('reports a bad setting before loading the gateway (Apollo Server, pino, undici): at once, not seconds later', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'petstore-loaded-'));
    try {
      // A test-only preload that lists, at exit, the CommonJS modules the process loaded.
      const preload = join(folder, 'loaded.cjs');
      await writeFile(
        preload,
        "process.on('exit', () => console.log('loaded ' + JSON.stringify(Object.keys(require.cache))));\n",
      );
      const run = spawnSync(process.execPath, ['--require', preload, ...MAIN], {
        cwd: ROOT,
        env: trackedEnv({ PATH: process.env.PATH ?? '', PORT: 'abc' }),
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toBe('gateway: PORT must be an integer from 0 to 65535\n');
      const loaded = JSON.parse(/^loaded (\[.*\])$/m.exec(run.stdout)?.[1] ?? 'null') as string[];
      expect(loaded.filter((path) => /node_modules\/(pino|undici|@apollo|graphql)\//.test(path))).toEqual([]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('refuses NODE_ENV=production without PETSTORE_BASE_URL in one line, exit 1', async () => {
    const run = await runToExit({ PORT: '0', NODE_ENV: 'production' });
    expectOneLineFailure(run, /NODE_ENV=production needs PETSTORE_BASE_URL .*PETSTORE_DEMO=true/);
  });

  it('starts the demo store under NODE_ENV=production when PETSTORE_DEMO=true says so', async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', NODE_ENV: 'production', PETSTORE_DEMO: 'true' },
      // The line after the ready line: output arrives in chunks, and waiting only for the ready
      // line let a busy CI machine read the output before the next chunk had come.
      ready: /Upstream: the embedded reference Pet Store at \S+/,
      timeoutMs: 30_000,
    });
    const url = READY.exec(started.output())?.[1] as string;
    expect((await fetch(new URL('/ready', url))).status).toBe(200);
  });

  it('says in one line that REDIS_URL does not answer, and why, and exits 1', async () => {
    const port = await freePort();
    const run = await runToExit({ PORT: '0', REDIS_URL: `redis://127.0.0.1:${port}` });
    expectOneLineFailure(
      run,
      new RegExp(
        `^gateway: REDIS_URL did not answer within 3 s at start \\(connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\); start Redis, or unset REDIS_URL$`,
        'm',
      ),
    );
    expect(run.stdout).not.toMatch(READY);
  });

  it('starts with an upstream that does not answer, and says so in one line naming PETSTORE_BASE_URL', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}/v1`;
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', PETSTORE_BASE_URL: base, PETSTORE_API_KEY: TEST_KEY },
      ready: /PETSTORE_BASE_URL .*\n/,
      timeoutMs: 30_000,
    });
    const said = lines(started.output()).filter((line) => line.includes('PETSTORE_BASE_URL'));
    expect(said).toEqual([
      `Upstream: PETSTORE_BASE_URL ${base} refused the connection; requests answer UPSTREAM_UNAVAILABLE until it does`,
    ]);
    const url = READY.exec(started.output())?.[1] as string;
    expect((await fetch(new URL('/ready', url))).status).toBe(200);
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ pets(first: 1) { nodes { id } } }' }),
    });
    const body = (await answer.json()) as { errors?: { extensions?: { code?: string } }[] };
    expect(body.errors?.[0]?.extensions?.code).toBe('UPSTREAM_UNAVAILABLE');
  });
});

describe('a Redis Cluster or Sentinel setting that names a plain Redis server', () => {
  let redis: RedisServer | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());

  /** The ConfigError's message a gateway on `env` refuses to start with. */
  async function refusal(env: Record<string, string>): Promise<unknown> {
    const config = parseConfig({ PORT: '0', PETSTORE_BASE_URL: 'http://127.0.0.1:9/v1', LOG_LEVEL: 'silent', ...env });
    return createGateway(config, { host: '127.0.0.1' }).then(
      async (gateway) => {
        await gateway.close();
        return 'started';
      },
      (error: unknown) => (error instanceof ConfigError ? error.message : error),
    );
  }

  it('refuses to start, saying what that server answered: not a Cluster node, not a sentinel', async () => {
    const address = `127.0.0.1:${(redis as RedisServer).port}`;
    const [cluster, sentinel] = await Promise.all([
      refusal({ REDIS_CLUSTER_NODES: address }),
      refusal({ REDIS_SENTINELS: address, REDIS_SENTINEL_MASTER: 'gateway' }),
    ]);
    expect(cluster).toBe(
      'REDIS_CLUSTER_NODES: Redis answered "ERR This instance has cluster support disabled" at start; it is not a Redis Cluster node (for one server, set REDIS_URL instead)',
    );
    expect(sentinel).toBe(
      `REDIS_SENTINELS: Redis answered "ERR unknown command 'sentinel', with args beginning with: 'get-master-addr-by-name' 'gateway'" at start; it is not a sentinel (REDIS_SENTINELS lists the sentinels, on port 26379 by default, not Redis servers)`,
    );
  });

  it('refuses to start with REDIS_TLS=true, saying the server speaks Redis without TLS', async () => {
    const address = `127.0.0.1:${(redis as RedisServer).port}`;
    expect(await refusal({ REDIS_CLUSTER_NODES: address, REDIS_TLS: 'true' })).toBe(
      `REDIS_CLUSTER_NODES: no TLS session with ${address} at start: the server there speaks Redis without TLS; set REDIS_TLS=false, or turn TLS on in Redis`,
    );
  });
});

describe('/ready while start-up waits for Redis', () => {
  let redis: RedisServer | undefined;
  let stoppedPid: number | undefined;
  let store: PetstoreHandle | undefined;
  let gateway: Promise<GatewayHandle> | undefined;

  beforeAll(async () => {
    redis = await startRedis();
    store = await startPetstore({ keys: { [TEST_KEY]: { perMinute: 100_000, perDay: 1_000_000 } } });
  });
  afterAll(async () => {
    // Resumed before it is stopped, whatever happened: a stopped process holds its port and ignores SIGTERM.
    if (stoppedPid !== undefined) process.kill(checkedPid(stoppedPid), 'SIGCONT');
    await gateway?.then((handle) => handle.close()).catch(() => {});
    await store?.close();
    await redis?.stop();
  });

  it('answers 503 while Redis is stopped, and 200 once it answers and start-up is done', async () => {
    const port = await freePort();
    const config = parseConfig({
      PORT: String(port),
      PETSTORE_BASE_URL: (store as PetstoreHandle).url,
      PETSTORE_API_KEY: TEST_KEY,
      REDIS_URL: (redis as RedisServer).url,
      LOG_LEVEL: 'silent',
    });
    stoppedPid = checkedPid((redis as RedisServer).pid);
    process.kill(stoppedPid, 'SIGSTOP');
    gateway = createGateway(config, { host: '127.0.0.1', redisPrefix: `startup-${process.pid}` });
    const settled = gateway.then(
      () => 'started',
      (error: Error) => `failed: ${error.message}`,
    );
    const ready = `http://127.0.0.1:${port}/ready`;

    // Listening comes first: /ready answers while Redis has not, and says 503.
    const whileStopped = await pollStatus(ready, (status) => status !== undefined, 2_500);
    expect(whileStopped).toBe(503);
    expect(await Promise.race([settled, delay(0).then(() => 'pending')])).toBe('pending');
    const graphql = await fetch(`http://127.0.0.1:${port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(graphql.status).toBe(503);
    expect(graphql.headers.get('retry-after')).toBe('1');
    // Liveness is not readiness: the process is alive while it waits.
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);

    process.kill(stoppedPid, 'SIGCONT');
    stoppedPid = undefined;
    expect(await settled).toBe('started');
    expect(await pollStatus(ready, (status) => status === 200, 5_000)).toBe(200);
  });
});

/** Polls `url` until `done(status)` or `ms` pass; the last status seen (undefined: no answer). */
async function pollStatus(
  url: string,
  done: (status: number | undefined) => boolean,
  ms: number,
): Promise<number | undefined> {
  const deadline = Date.now() + ms;
  let status: number | undefined;
  do {
    status = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.status,
      () => undefined,
    );
    if (done(status)) return status;
    await delay(20);
  } while (Date.now() < deadline);
  return status;
}
