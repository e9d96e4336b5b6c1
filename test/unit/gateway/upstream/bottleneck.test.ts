/**
 * The bottleneck adapter (src/gateway/upstream/limits/bottleneck.ts): its datastore's yields, and
 * what it does when bottleneck is no longer as it knows it. Bottleneck's datastore class is changed
 * in place to play a changed release (and restored after), on vitest's fake timers. The limiter's own
 * behaviour as the key queue uses it is in key-queue.test.ts.
 */

import { createRequire } from 'node:module';
import type BottleneckType from 'bottleneck';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createKeyLimiter, yieldsWithoutTimer } from '../../../../src/gateway/upstream/limits/bottleneck.js';

const Bottleneck: typeof BottleneckType = createRequire(import.meta.url)('bottleneck/light');

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

interface Store {
  yieldLoop(t?: number): Promise<void> | undefined;
}
const storeOf = (limiter: BottleneckType) => (limiter as unknown as { _store: Store })._store;
/** Bottleneck's LocalDatastore class, as far as these tests change it. */
interface Datastore {
  readonly prototype: Partial<Store>;
}

/** Runs `body` with bottleneck's LocalDatastore changed by `change`, then puts the class back as it was. */
async function withDatastore(change: (datastore: Datastore) => void, body: () => Promise<void>): Promise<void> {
  const datastore = Object.getPrototypeOf(storeOf(new Bottleneck())).constructor as Datastore;
  const name = Object.getOwnPropertyDescriptor(datastore, 'name') as PropertyDescriptor;
  const yieldLoop = Object.getOwnPropertyDescriptor(datastore.prototype, 'yieldLoop') as PropertyDescriptor;
  try {
    change(datastore);
    await body();
  } finally {
    Object.defineProperty(datastore, 'name', name);
    Object.defineProperty(datastore.prototype, 'yieldLoop', yieldLoop);
  }
}

describe('the bottleneck adapter', () => {
  it('yields at once, with no timer, when asked for no time', async () => {
    const store = storeOf(createKeyLimiter(1));
    let yielded = false;
    void store.yieldLoop()?.then(() => {
      yielded = true;
    });
    expect(vi.getTimerCount()).toBe(0);
    await Promise.resolve();
    expect(yielded).toBe(true);
  });

  it("keeps bottleneck's timer for a yield asked to last a time", async () => {
    const store = storeOf(createKeyLimiter(1));
    let yielded = false;
    void store.yieldLoop(50)?.then(() => {
      yielded = true;
    });
    await vi.advanceTimersByTimeAsync(49);
    expect(yielded).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(yielded).toBe(true);
  });

  it('leaves a datastore of another name unpatched, and its limiter still runs jobs', async () => {
    await withDatastore(
      (datastore) => Object.defineProperty(datastore, 'name', { value: 'RenamedDatastore' }),
      async () => {
        const limiter = createKeyLimiter(1);
        expect(yieldsWithoutTimer(limiter)).toBe(false);
        const job = limiter.schedule(async () => 'ran');
        void limiter.incrementReservoir(1);
        await vi.advanceTimersByTimeAsync(50);
        expect(await job).toBe('ran');
      },
    );
  });

  it('leaves a datastore without yieldLoop unpatched', async () => {
    await withDatastore(
      (datastore) => delete datastore.prototype.yieldLoop,
      async () => {
        const limiter = createKeyLimiter(1);
        expect(yieldsWithoutTimer(limiter)).toBe(false);
        expect(storeOf(limiter).yieldLoop).toBeUndefined();
      },
    );
  });

  it('says a limiter whose datastore is not where bottleneck 2.19.5 keeps it does not yield without a timer', () => {
    expect(yieldsWithoutTimer({} as BottleneckType)).toBe(false);
  });
});
