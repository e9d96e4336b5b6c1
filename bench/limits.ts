/**
 * `npm run bench:limits`: the free plan's shape scaled from minutes to seconds (60 requests per
 * 1 s window) under two times overload, through one gateway and through three replicas sharing
 * Redis. Prints upstream requests sent, 429s received and the share of the budget used.
 */

import { parseConfig } from '../src/config.js';
import { createGateway, type GatewayHandle } from '../src/gateway/server.js';
import type { RequestRecord } from '../src/petstore/app.js';
import { startPetstore } from '../src/petstore/start.js';
import { gql } from '../test/helpers/gql.js';
import { startRedis } from '../test/helpers/redis.js';

const KEY = 'bench-key';
const LIMIT = 60; // per window: the free plan's 60 a minute…
const WINDOW_MS = 1_000; // …with the minute scaled to a second
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const OVERLOAD = 2;
/** Each request asks for another page size, so none is shared with another in flight. */
const query = (i: number) => `{ pets(first: ${(i % 100) + 1}) { nodes { id } } }`;

interface Row {
  setup: string;
  offered: number;
  served: number;
  rateLimited: number;
  upstream: number;
  upstream429: number;
  budget: number;
}

async function run(setup: string, replicas: number, redisUrl?: string): Promise<Row> {
  const records: RequestRecord[] = [];
  const store = await startPetstore({
    keys: { [KEY]: { perMinute: LIMIT, perDay: 1_000_000 } },
    minuteMs: WINDOW_MS,
    onRequest: (record) => records.push(record),
  });
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: store.url,
    PETSTORE_API_KEY: KEY,
    PETSTORE_RATE_LIMITS: `${LIMIT}/1s`,
    PETSTORE_MAX_WAIT: '2s',
    // The queries repeat every 100; joining identical ones in flight would serve some without
    // budget. This measures the limiter alone (npm run bench:economy measures sharing).
    PETSTORE_COALESCE: 'false',
    LOG_LEVEL: process.env.BENCH_LOG ?? 'silent',
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
  });
  const gateways: GatewayHandle[] = [];
  const redisPrefix = `bench-${process.pid}-${replicas}`;
  for (let i = 0; i < replicas; i++) gateways.push(await createGateway(config, { host: '127.0.0.1', redisPrefix }));

  // Start on a window boundary so the budget of the run is exactly SECONDS windows.
  await sleep(WINDOW_MS - (Date.now() % WINDOW_MS));
  const start = Date.now();
  const offered = SECONDS * LIMIT * OVERLOAD;
  const interval = (SECONDS * 1_000) / offered;
  const pending: Promise<string>[] = [];
  for (let i = 0; i < offered; i++) {
    await sleep(start + i * interval - Date.now());
    const gateway = gateways[i % replicas] as GatewayHandle;
    pending.push(gql(gateway.url, query(i)).then((r) => String(r.body.errors?.[0]?.extensions?.code ?? 'ok')));
  }
  const outcomes = await Promise.all(pending);
  const end = start + SECONDS * 1_000;
  const inRun = records.filter((record) => record.receivedAt >= start && record.receivedAt < end);
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await store.close();
  return {
    setup,
    offered,
    served: outcomes.filter((outcome) => outcome === 'ok').length,
    rateLimited: outcomes.filter((outcome) => outcome === 'RATE_LIMITED').length,
    upstream: records.length,
    upstream429: records.filter((record) => record.status === 429).length,
    budget: (inRun.filter((record) => record.status === 200).length / (SECONDS * LIMIT)) * 100,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

const redis = await startRedis();
try {
  const rows = [await run('1 gateway', 1), await run('3 gateways, one Redis', 3, redis.url)];
  console.log(
    `Free plan shape scaled to seconds: ${LIMIT} requests per ${WINDOW_MS} ms window, ${OVERLOAD}x overload for ${SECONDS} s (PETSTORE_MAX_WAIT=2s)\n`,
  );
  console.log('| setup | offered | served | RATE_LIMITED | upstream requests | upstream 429s | budget used |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.setup} | ${r.offered} | ${r.served} | ${r.rateLimited} | ${r.upstream} | ${r.upstream429} | ${r.budget.toFixed(1)}% |`,
    );
  }
} finally {
  await redis.stop();
}
