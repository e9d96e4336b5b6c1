/**
 * What the gateway relies on from bottleneck 2.19.5 (its last release, pinned), through
 * key-limiters.ts: per-key concurrency, a reservoir set from the upstream's word and emptied by a
 * pause, deadlines and departures that drop a queued job without running it, a throwing job that
 * frees its slot, no job lost or run twice, and idle limiters dropped. Real bottleneck limiters and
 * real timers, with windows of tens of milliseconds.
 */

import { createRequire } from 'node:module';
import type BottleneckType from 'bottleneck';
import { afterEach, describe, expect, it } from 'vitest';
import { Cancellation } from '../../../../src/gateway/shared/cancel.js';
import { createKeyLimiters, type KeyLimiters } from '../../../../src/gateway/upstream/limits/key-limiters.js';

let limiters: KeyLimiters | undefined;
afterEach(async () => {
  await limiters?.close();
  limiters = undefined;
});

function create(maxConcurrent = 2): KeyLimiters {
  limiters = createKeyLimiters({ maxConcurrent, idleMs: 60_000 });
  return limiters;
}

const deadline = () => new Error('deadline');
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Resolves once `done()` holds (bottleneck starts jobs a few turns of the event loop later). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await delay(5);
}

/** A job that records when it ran and waits for `release()`. */
function gatedJobs() {
  const started: string[] = [];
  const gates: (() => void)[] = [];
  const job = (name: string) => () =>
    new Promise<string>((resolve) => {
      started.push(name);
      gates.push(() => resolve(name));
    });
  const releaseAll = () => {
    for (const release of gates.splice(0)) release();
  };
  return { started, job, releaseAll };
}

describe('key limiters (bottleneck)', () => {
  it("runs at most maxConcurrent of a key's jobs at once, and never holds another key's", async () => {
    const keys = create(2);
    const { started, job, releaseAll } = gatedJobs();
    const runs = ['a1', 'a2', 'a3'].map((name) => keys.schedule('a', job(name), 5_000, undefined, deadline));
    const other = keys.schedule('b', job('b1'), 5_000, undefined, deadline);
    await until(() => started.length === 3);
    await delay(50);
    expect(started.sort()).toEqual(['a1', 'a2', 'b1']);
    expect(keys.stats().running).toBe(3);
    releaseAll();
    await until(() => started.includes('a3'));
    releaseAll();
    expect(await Promise.all([...runs, other])).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(keys.stats().jobs).toBe(4);
  });

  it("holds a key's jobs while the upstream's Remaining is spent, and refills them at its Reset", async () => {
    const keys = create(4);
    const ran: number[] = [];
    const t0 = Date.now();
    // A first job to make the limiter, then the word: 1 left until 150 ms from now, then 3.
    await keys.schedule(
      'k',
      async () => keys.answered('k', { limit: 3, remaining: 1, resetAt: t0 + 150 }),
      1_000,
      undefined,
      deadline,
    );
    const jobs = Array.from({ length: 3 }, () =>
      keys.schedule('k', async () => ran.push(Date.now() - t0), 1_000, undefined, deadline),
    );
    await Promise.all(jobs);
    expect(ran).toHaveLength(3);
    expect(ran.filter((at) => at < 150)).toHaveLength(1);
    expect(ran.filter((at) => at >= 145)).toHaveLength(2);
  });

  it('empties the reservoir for a pause, so queued jobs wait; then lets one go, whose answer decides', async () => {
    const keys = create(4);
    const ran: number[] = [];
    const t0 = Date.now();
    await keys.schedule('k', async () => keys.pause('k', t0 + 120), 1_000, undefined, deadline);
    expect(keys.blockedUntil('k')).toBe(t0 + 120);
    const probe = keys.schedule(
      'k',
      async () => {
        ran.push(Date.now() - t0);
        keys.answered('k', { limit: 10, remaining: 10, resetAt: Date.now() + 60_000 });
      },
      1_000,
      undefined,
      deadline,
    );
    const rest = Array.from({ length: 2 }, () =>
      keys.schedule('k', async () => ran.push(Date.now() - t0), 1_000, undefined, deadline),
    );
    await Promise.all([probe, ...rest]);
    expect(ran).toHaveLength(3);
    for (const at of ran) expect(at).toBeGreaterThanOrEqual(115);
    expect(keys.blockedUntil('k')).toBe(0);
  });

  it('does not let answers to requests sent before a pause lift it', async () => {
    const keys = create(4);
    const t0 = Date.now();
    await keys.schedule(
      'k',
      async () => {
        keys.pause('k', t0 + 100);
        keys.answered('k', { limit: 10, remaining: 9, resetAt: t0 + 60_000 });
        keys.answered('k', undefined);
      },
      1_000,
      undefined,
      deadline,
    );
    expect(keys.blockedUntil('k')).toBe(t0 + 100);
  });

  it('answers a job that has not started by its deadline, never runs it, and gives its reservoir unit back', async () => {
    const keys = create(1);
    const { started, job, releaseAll } = gatedJobs();
    const first = keys.schedule('k', job('first'), 1_000, undefined, deadline);
    await until(() => started.length === 1);
    const late = keys.schedule('k', job('late'), 30, undefined, deadline);
    await expect(late).rejects.toThrow('deadline');
    releaseAll();
    await first;
    await delay(30);
    expect(started).toEqual(['first']);
    // The abandoned job took nothing from a reservoir of 1: the next one runs.
    keys.answered('k', { limit: 5, remaining: 2, resetAt: Date.now() + 60_000 });
    const after = keys.schedule('k', job('after'), 1_000, undefined, deadline);
    await until(() => started.length === 2);
    releaseAll();
    expect(await after).toBe('after');
  });

  it('drops a queued job whose client leaves, with the reason the client gave', async () => {
    const keys = create(1);
    const { started, job, releaseAll } = gatedJobs();
    const first = keys.schedule('k', job('first'), 1_000, undefined, deadline);
    await until(() => started.length === 1);
    const gone = new Cancellation();
    const leaving = keys.schedule('k', job('leaving'), 1_000, gone, deadline);
    gone.abort(new Error('client left'));
    await expect(leaving).rejects.toThrow('client left');
    releaseAll();
    await first;
    await delay(30);
    expect(started).toEqual(['first']);
  });

  it('rejects the caller of a job that throws, and frees its slot for the next', async () => {
    const keys = create(1);
    const failing = keys.schedule(
      'k',
      async () => {
        throw new Error('boom');
      },
      1_000,
      undefined,
      deadline,
    );
    await expect(failing).rejects.toThrow('boom');
    await expect(keys.schedule('k', async () => 'next', 1_000, undefined, deadline)).resolves.toBe('next');
  });

  it('runs every job once: none lost, none twice, under many keys and concurrency', async () => {
    const keys = create(3);
    const runs = new Map<number, number>();
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        keys.schedule(
          `key-${i % 7}`,
          async () => {
            runs.set(i, (runs.get(i) ?? 0) + 1);
            await delay(i % 3);
          },
          5_000,
          undefined,
          deadline,
        ),
      ),
    );
    expect(runs.size).toBe(300);
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
    expect(keys.stats().jobs).toBe(300);
  });

  it('drops idle limiters, and keeps one whose upstream word is still to come true until it has', async () => {
    const keys = create(2);
    await Promise.all(
      Array.from({ length: 500 }, (_, i) => keys.schedule(`key-${i}`, async () => i, 10_000, undefined, deadline)),
    );
    await until(() => keys.stats().keys === 0);
    await keys.schedule('known', async () => keys.pause('known', Date.now() + 300), 1_000, undefined, deadline);
    await delay(20);
    expect(keys.stats().keys).toBe(1);
    await until(() => keys.stats().keys === 0);
  });

  it('keeps at most maxIdleKeys idle limiters for what the upstream said, dropping the oldest', async () => {
    limiters = createKeyLimiters({ maxConcurrent: 1, idleMs: 60_000, maxIdleKeys: 3 });
    const keys = limiters;
    for (let i = 0; i < 10; i++) {
      await keys.schedule(
        `key-${i}`,
        async () => keys.answered(`key-${i}`, { limit: 5, remaining: 0, resetAt: Date.now() + 60_000 }),
        1_000,
        undefined,
        deadline,
      );
    }
    await until(() => keys.stats().keys <= 3);
    expect(keys.stats().keys).toBe(3);
    expect(keys.blockedUntil('key-9')).toBeGreaterThan(Date.now());
    expect(keys.blockedUntil('key-0')).toBe(0);
  });

  it("replaces bottleneck's zero-delay timer yields on its limiters (the internal it relies on exists)", async () => {
    const keys = create(1);
    // createKeyLimiters throws on the first limiter if bottleneck's local datastore has no yieldLoop.
    await expect(keys.schedule('k', async () => 'ran', 1_000, undefined, deadline)).resolves.toBe('ran');
  });
});

describe('bottleneck 2.19.5 itself', () => {
  const Bottleneck: typeof BottleneckType = createRequire(import.meta.url)('bottleneck');

  it("drops a Group's limiter idle past the Group's timeout (the backstop under our own dropping)", async () => {
    const group = new Bottleneck.Group({ maxConcurrent: 1, timeout: 100 });
    await group.key('a').schedule(async () => 'ran');
    expect(group.keys()).toEqual(['a']);
    await until(() => group.keys().length === 0);
    expect(group.keys()).toEqual([]);
  });

  it('holds jobs while its reservoir is 0 and starts them when it is raised', async () => {
    const limiter = new Bottleneck({ reservoir: 0 });
    let ran = false;
    const job = limiter.schedule(async () => {
      ran = true;
    });
    await delay(50);
    expect(ran).toBe(false);
    await limiter.incrementReservoir(1);
    await job;
    expect(ran).toBe(true);
    expect(await limiter.currentReservoir()).toBe(0);
    await limiter.disconnect();
  });
});
