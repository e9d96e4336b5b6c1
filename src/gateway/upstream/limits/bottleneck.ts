/**
 * The one place bottleneck's internals are touched (issue 43: a patch worth its cost lives in one
 * adapter, with a test that fails when bottleneck changes: test/unit/gateway/upstream/bottleneck.test.ts).
 *
 * bottleneck's in-process datastore yields to the event loop before each of its steps with
 * `setTimeout(resolve, 0)` (`LocalDatastore.yieldLoop`, 2.19.5), a habit it keeps for its Redis
 * datastore's sake. A queued job passes through five such steps (submit, register, the reservoir's
 * increment, free, and the next register) and then its own `setTimeout(run, wait)`: on a busy
 * gateway each is a turn of the event loop, milliseconds apiece, so one API key whose requests
 * queue for its share of connections was served 430 requests/s at 32 connections, where the same
 * key with a wider share (no queue) got 1,360 (docs/benchmarks.md). Here the in-process datastore
 * yields with a resolved promise instead: its steps still run in order, after the current one, but
 * without waiting for the next turn of the loop. A yield asked for a time (`t > 0`, which this
 * gateway never configures) keeps bottleneck's timer.
 */

import { createRequire } from 'node:module';
import type BottleneckType from 'bottleneck';

/** The build without Redis clustering, which we do not use (see key-queue.ts). */
const Bottleneck: typeof BottleneckType = createRequire(import.meta.url)('bottleneck/light');

interface LocalStore {
  yieldLoop(t?: number): Promise<void>;
}

/** Whether `store` is bottleneck's in-process datastore as this adapter knows it. */
function isLocalStore(store: unknown): store is LocalStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    store.constructor?.name === 'LocalDatastore' &&
    typeof (store as LocalStore).yieldLoop === 'function'
  );
}

/** Whether the limiter's datastore yields without a timer (false: bottleneck changed, and runs unpatched). */
export function yieldsWithoutTimer(limiter: BottleneckType): boolean {
  return (limiter as unknown as { _store: { yieldLoop: { patched?: true } } })._store?.yieldLoop?.patched === true;
}

/** A bottleneck limiter for one key's queue: `maxConcurrent` at once, an empty reservoir to start. */
export function createKeyLimiter(maxConcurrent: number): BottleneckType {
  const limiter = new Bottleneck({ maxConcurrent, reservoir: 0 });
  const store: unknown = (limiter as unknown as { _store: unknown })._store;
  if (isLocalStore(store)) {
    const timed = store.yieldLoop.bind(store);
    const yieldLoop = (t = 0): Promise<void> => (t > 0 ? timed(t) : Promise.resolve());
    store.yieldLoop = Object.assign(yieldLoop, { patched: true as const });
  }
  return limiter;
}
