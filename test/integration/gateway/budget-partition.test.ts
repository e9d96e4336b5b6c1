/**
 * A short partition of one replica from Redis, with the plan mostly unspent (issue 43's finding,
 * tried the same way): two replicas on one redis-server, the pro plan's shape (300 a minute, 10,000
 * a day), two queries a second on each; one replica's connection to Redis cut for 4 s. Before the
 * budget was rebuilt, the cut replica refused every query during the cut, and from the heal on both
 * refused every query for more than 20 s (the rejoin fenced the whole window). Now: the replica
 * that kept Redis refuses nothing, the cut one serves on its local share, and 5 s after the heal
 * neither refuses anything.
 *
 * Faked: nothing. The partition is a TCP proxy on loopback between the one replica and Redis
 * (test/helpers/tcp-proxy.ts): it drops that replica's connections and refuses new ones.
 */

import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createGateway, type GatewayHandle } from '../../../src/gateway/server.js';
import type { RequestRecord } from '../../../src/petstore/app.js';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import { errorCodes, gql } from '../../helpers/gql.js';
import { type RedisServer, startRedis } from '../../helpers/redis.js';
import { TEST_KEY } from '../../helpers/start-stack.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';

const EVERY_MS = 500;
const CUT_AT_MS = 2_000;
const CUT_MS = 4_000;
/** From the heal, as the finding was judged: no refusal on either replica from then on. */
const SETTLE_MS = 5_000;
const CHECK_MS = 4_000;

let redis: RedisServer;
let proxy: TcpProxy;
let store: PetstoreHandle;
const gateways: GatewayHandle[] = [];
const records: RequestRecord[] = [];

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startTcpProxy({ port: redis.port });
  store = await startPetstore({
    keys: { [TEST_KEY]: { perMinute: 300, perDay: 10_000 } },
    onRequest: (record) => records.push(record),
  });
  const env = {
    PORT: '0',
    PETSTORE_BASE_URL: store.url,
    PETSTORE_API_KEY: TEST_KEY,
    PETSTORE_RATE_LIMITS: '300/1m,10000/1d',
    PETSTORE_COALESCE: 'false',
    LOG_LEVEL: 'silent',
  };
  const redisPrefix = `partition-${process.pid}`;
  for (const url of [redis.url, `redis://127.0.0.1:${proxy.port}`]) {
    gateways.push(await createGateway(parseConfig({ ...env, REDIS_URL: url }), { host: '127.0.0.1', redisPrefix }));
  }
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await store?.close();
  await proxy?.close();
  await redis?.stop();
});

interface Asked {
  readonly replica: 'kept' | 'cut';
  readonly at: number;
  readonly codes: readonly unknown[];
}

it('keeps both replicas serving through a 4 s partition of one from Redis, and after it heals', async () => {
  const [kept, cut] = gateways as [GatewayHandle, GatewayHandle];
  const started = Date.now();
  const end = CUT_AT_MS + CUT_MS + SETTLE_MS + CHECK_MS;
  const asked: Asked[] = [];
  let n = 0;
  // Open loop: a query every EVERY_MS on each replica, whatever the last one is doing.
  const pending: Promise<void>[] = [];
  const ask = (replica: Asked['replica'], gateway: GatewayHandle) => {
    const at = Date.now() - started;
    pending.push(
      gql(gateway.url, `{ pets(first: ${(n++ % 100) + 1}) { nodes { id } } }`).then((response) => {
        asked.push({ replica, at, codes: errorCodes(response) });
      }),
    );
  };
  const cutting = (async () => {
    await new Promise((resolve) => setTimeout(resolve, CUT_AT_MS));
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, CUT_MS));
    await proxy.heal();
  })();
  while (Date.now() - started < end) {
    ask('kept', kept);
    ask('cut', cut);
    await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
  }
  await cutting;
  await Promise.all(pending);

  const refused = (replica: Asked['replica'], from: number, to: number) =>
    asked.filter((a) => a.replica === replica && a.at >= from && a.at < to && a.codes.length > 0);
  const during = asked.filter((a) => a.replica === 'cut' && a.at >= CUT_AT_MS && a.at < CUT_AT_MS + CUT_MS);
  const healed = CUT_AT_MS + CUT_MS;
  // The replica that kept Redis refuses nothing, at any time.
  expect(refused('kept', 0, end)).toEqual([]);
  // The cut one serves on its local share: a plan 4% spent leaves it room for every query.
  expect(during.length).toBeGreaterThanOrEqual(6);
  expect(refused('cut', CUT_AT_MS, healed)).toEqual([]);
  // From 5 s after the heal, neither refuses.
  expect(refused('kept', healed + SETTLE_MS, end)).toEqual([]);
  expect(refused('cut', healed + SETTLE_MS, end)).toEqual([]);
  expect(records.filter((record) => record.status === 429)).toEqual([]);
}, 40_000);
