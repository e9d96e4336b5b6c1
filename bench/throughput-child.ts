/**
 * A server process of `npm run bench:throughput`, started (pinned with taskset) by bench/throughput.ts
 * over an IPC channel:
 *
 *   store            the reference Pet Store with the demo catalogue and key `k` (limits no run reaches);
 *                    answers `{ type: 'count' }` with the requests it has served and how many were not 200
 *   gateway STORE [NAME=value ...]
 *                    our gateway (createGateway) in front of STORE, PETSTORE_RATE_LIMITS=off, production;
 *                    each NAME=value is one more setting (e.g. PETSTORE_COALESCE=false)
 *
 * Each sends `{ type: 'ready', url }` once listening and stops on SIGTERM or when the parent goes away.
 */

import { existsSync } from 'node:fs';
import { demoCatalogue } from '../src/petstore/seed.js';
import { startPetstore } from '../src/petstore/start.js';

/**
 * The gateway under test runs from the build (npm run build), as `npm start` runs it: tsx's
 * on-the-fly transpiling costs about a fifth of the throughput at runtime.
 */
const built = new URL('../dist/gateway/server.js', import.meta.url);
if (!existsSync(built)) throw new Error('dist/ is missing: run npm run build first');
const { createGateway } = (await import(built.href)) as typeof import('../src/gateway/server.js');
const { parseConfig } = (await import(
  new URL('../dist/config.js', import.meta.url).href
)) as typeof import('../src/config.js');

const BENCH_KEY = 'k';

const [mode, upstream, ...settings] = process.argv.slice(2);
const send = (message: unknown): void => void process.send?.(message);

let close: () => Promise<void>;
if (mode === 'store') {
  const counts = { requests: 0, notOk: 0 };
  const store = await startPetstore({
    keys: { [BENCH_KEY]: { perMinute: 1e9, perDay: 1e12 } },
    seed: demoCatalogue(),
    onRequest: (record) => {
      counts.requests++;
      if (record.status !== 200) counts.notOk++;
    },
  });
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'count') send({ type: 'count', ...counts });
  });
  close = store.close;
  send({ type: 'ready', url: store.url });
} else if (mode === 'gateway' && upstream !== undefined) {
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: upstream,
    PETSTORE_API_KEY: BENCH_KEY,
    PETSTORE_RATE_LIMITS: 'off',
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    // Fixed, so every gateway of a run accepts the others' cursors, as replicas do (the mix walks
    // pages through one gateway and replays them on the rest). Not a secret: loopback, bench only.
    CURSOR_SECRET: 'bench-cursors-on-loopback-only',
    ...Object.fromEntries(settings.map((setting) => setting.split(/=(.*)/s, 2))),
  });
  const gateway = await createGateway(config, { host: '127.0.0.1' });
  close = gateway.close;
  send({ type: 'ready', url: gateway.url });
} else {
  console.error('usage: throughput-child.ts store | gateway <store base URL> [NAME=value ...]');
  process.exit(2);
}

const stop = (): void => void close().finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop);
