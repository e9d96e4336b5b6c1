/**
 * A server process of `npm run bench:throughput`, started (pinned with taskset) by bench/throughput.ts
 * over an IPC channel:
 *
 *   store            the reference Pet Store with the demo catalogue and key `k` (limits no run reaches);
 *                    answers `{ type: 'count' }` with the requests it has served and how many were not 200
 *   floor STORE      the Node floor (bench/lib/floor.ts) in front of STORE
 *   apollo STORE     the Apollo floor (bench/lib/floor.ts) in front of STORE
 *   sharing-floor STORE, constant-floor STORE   the Node floor's variants for the tail (bench/lib/floor.ts)
 *
 * Each sends `{ type: 'ready', url }` once listening and stops on SIGTERM or when the parent goes away.
 */

import { demoCatalogue } from '../src/petstore/seed.js';
import { startPetstore } from '../src/petstore/start.js';
import { FLOOR_KINDS, isFloorKind, startApolloFloor, startFloor } from './lib/floor.js';

const BENCH_KEY = 'k';

const [mode, upstream] = process.argv.slice(2);
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
} else if (mode !== undefined && isFloorKind(mode) && upstream !== undefined) {
  const floor = await (mode === 'apollo'
    ? startApolloFloor(upstream, BENCH_KEY)
    : startFloor(upstream, BENCH_KEY, mode));
  close = floor.close;
  send({ type: 'ready', url: floor.url });
} else {
  console.error(`usage: throughput-child.ts store | ${FLOOR_KINDS.join(' | ')} <store base URL>`);
  process.exit(2);
}

const stop = (): void => void close().finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop);
