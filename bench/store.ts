/**
 * The reference Pet Store as its own process for the load benches (bench/lib/servers.ts starts it
 * with an IPC channel): the demo catalogue and key `k` with limits no run reaches. Sends
 * `{ type: 'ready', url }` once listening; answers `{ type: 'count' }` with the requests it has
 * served and how many were not 200; stops on SIGTERM or when the bench goes away.
 */

import { demoCatalogue } from '../src/petstore/seed.js';
import { startPetstore } from '../src/petstore/start.js';

const counts = { requests: 0, notOk: 0 };
const store = await startPetstore({
  keys: { k: { perMinute: 1e9, perDay: 1e12 } },
  seed: demoCatalogue(),
  onRequest: (record) => {
    counts.requests++;
    if (record.status !== 200) counts.notOk++;
  },
});
process.on('message', (message: { type?: string }) => {
  if (message?.type === 'count') process.send?.({ type: 'count', ...counts });
});
process.send?.({ type: 'ready', url: store.url });
const stop = (): void => void store.close().finally(() => process.exit(0));
for (const event of ['SIGTERM', 'SIGINT', 'disconnect'] as const) process.once(event, stop);
