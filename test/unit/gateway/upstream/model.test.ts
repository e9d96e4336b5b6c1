/**
 * The budget's log of sends (src/gateway/upstream/limits/model.ts), against a count by hand: at any
 * time every window holds exactly the sends made within it, and a send is
 * planned exactly when each window has room for it. The log is searched by halves and trimmed in
 * batches (a key near 100,000 a minute holds that many sends), so the count by hand is what keeps
 * those honest. fast-check draws the plans and the times, and shrinks a failure. The cases after it
 * pin what a random run may not hit: a send exactly a window old, the time a full window frees,
 * a local share of a window, the batch the log is trimmed by, and a clock that steps back.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Answer,
  answer,
  type KeyBudget,
  newBudget,
  type Plan,
  release,
  reserve,
  room,
  view,
} from '../../../../src/gateway/upstream/limits/model.js';

const T = 1_800_000_000_000;

/** An answer that leaves the upstream's gate wide open, so only the plan's windows decide. */
const wide: Answer = {
  status: 200,
  word: { limit: 1e9, remaining: 1e9, resetAt: T + 1e9 },
  retryAfterMs: undefined,
  jitter: 0,
};

function seqOf(planned: ReturnType<typeof reserve>): number {
  if (!('seq' in planned)) throw new Error(`refused: ${JSON.stringify(planned.room)}`);
  return planned.seq;
}

/** A key past its probe, sent at `now` and answered with `wide`: its log holds that one send. */
function opened(plan: Plan, now = T): KeyBudget {
  const budget = newBudget();
  answer(budget, plan, seqOf(reserve(budget, plan, now)), wide, now);
  return budget;
}

/** Plans `times` sends at `now`, each ended at once so the congestion window never binds. */
function send(budget: KeyBudget, plan: Plan, now: number, times = 1): void {
  for (let i = 0; i < times; i++) release(budget, seqOf(reserve(budget, plan, now)));
}

describe('the budget log', () => {
  it('counts every window exactly, and plans a send exactly when every window has room', () => {
    const windows = fc
      .uniqueArray(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 3 })
      .chain((lengths) =>
        fc.tuple(
          ...lengths
            .sort((a, b) => a - b)
            .map((windowMs) => fc.record({ count: fc.integer({ min: 1, max: 150 }), windowMs: fc.constant(windowMs) })),
        ),
      );
    // Steps of the clock, often none (sends in the same millisecond).
    const steps = fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 200, maxLength: 1_000 });
    fc.assert(
      fc.property(windows, steps, (planned, deltas) => {
        const plan: Plan = { windows: planned, share: 1 };
        const budget = newBudget();
        const sent: number[] = [];
        let now = T;
        for (const delta of deltas) {
          now += delta;
          const inside = (windowMs: number) => sent.filter((at) => at > now - windowMs).length;
          const room = planned.every(({ count, windowMs }) => inside(windowMs) < count);
          const result = reserve(budget, plan, now);
          expect('seq' in result).toBe(room);
          if ('seq' in result) {
            // What the fullest window holds with this send (once the gate is known: not for the first).
            if (sent.length > 0) expect(result.used).toBe(Math.max(...planned.map((w) => inside(w.windowMs))) + 1);
            sent.push(now);
            // The upstream's word opens its gate wide, so only the plan's windows decide.
            const word = { limit: 1e9, remaining: 1e9, resetAt: now + 1e9 };
            answer(budget, plan, result.seq, { status: 200, word, retryAfterMs: undefined, jitter: 0 }, now);
          }
          const first = planned[0] as { windowMs: number };
          expect(view(budget, plan, now)?.used).toBe(inside(first.windowMs));
        }
      }),
      // Fewer under mutation testing (vitest.mutation.config.ts), where it runs once per mutant.
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 100) },
    );
  });

  it('frees a window when its oldest send is exactly a window old, not a millisecond before', () => {
    const plan: Plan = { windows: [{ count: 2, windowMs: 1_000 }], share: 1 };
    const budget = opened(plan);
    send(budget, plan, T + 10);
    expect(reserve(budget, plan, T + 999)).toEqual({ room: { free: 0, until: T + 1_000, wait: 'window' } });
    // Full again with this send: until the one at T + 10 leaves.
    expect(reserve(budget, plan, T + 1_000)).toEqual({
      seq: 3,
      used: 2,
      room: { free: 0, until: T + 1_010, wait: 'window' },
    });
  });

  it('with a window of one, says the send that fills it frees it a window after itself', () => {
    const plan: Plan = { windows: [{ count: 1, windowMs: 1_000 }], share: 1 };
    expect(reserve(newBudget(), plan, T)).toEqual({
      seq: 1,
      used: 1,
      room: { free: 0, until: T + 1_000, wait: 'window' },
    });
  });

  it('waits for the window that frees last, and reports the fullest window as used', () => {
    const plan: Plan = {
      windows: [
        { count: 2, windowMs: 100 },
        { count: 3, windowMs: 1_000 },
      ],
      share: 1,
    };
    const budget = opened(plan);
    expect(reserve(budget, plan, T + 50)).toEqual({
      seq: 2,
      used: 2,
      room: { free: 0, until: T + 100, wait: 'window' },
    });
    // The short window has room again, the long one has two: this send fills both.
    expect(reserve(budget, plan, T + 100)).toEqual({
      seq: 3,
      used: 3,
      room: { free: 0, until: T + 1_000, wait: 'window' },
    });
  });

  it('says when the full window frees, however little the longer ones hold', () => {
    const plan: Plan = {
      windows: [
        { count: 1, windowMs: 100 },
        { count: 5, windowMs: 1_000 },
      ],
      share: 1,
    };
    const budget = opened(plan);
    expect(room(budget, plan, T + 10)).toEqual({ free: 0, until: T + 100, wait: 'window' });
  });

  it('plans its share of each window, and at least one', () => {
    const half: Plan = { windows: [{ count: 6, windowMs: 1_000 }], share: 0.5 };
    expect(room(opened(half), half, T)).toEqual({ free: 2, until: T, wait: undefined });
    const tiny: Plan = { windows: [{ count: 3, windowMs: 1_000 }], share: 0.25 };
    expect(reserve(newBudget(), tiny, T)).toEqual({
      seq: 1,
      used: 1,
      room: { free: 0, until: T + 1_000, wait: 'window' },
    });
  });

  it('drops sends older than the longest window once all of them are, or 64 at once', () => {
    const plan: Plan = { windows: [{ count: 1_000, windowMs: 1_000 }], share: 1 };
    const budget = opened(plan);
    send(budget, plan, T, 62);
    send(budget, plan, T + 500);
    send(budget, plan, T + 600);
    // 63 out of every window: too few to move the log for.
    room(budget, plan, T + 1_000);
    expect(budget.log).toHaveLength(65);
    room(budget, plan, T + 1_500);
    expect(budget.log).toEqual([T + 600]);
    room(budget, plan, T + 1_600);
    expect(budget.log).toEqual([]);
  });

  it('keeps the log ascending when the clock steps back, so such a send stays a whole window', () => {
    const plan: Plan = { windows: [{ count: 2, windowMs: 1_000 }], share: 1 };
    const budget = opened(plan, T + 100);
    expect(budget.log).toEqual([T + 100]);
    send(budget, plan, T + 50);
    expect(budget.log).toEqual([T + 100, T + 100]);
    expect(room(budget, plan, T + 1_099)).toEqual({ free: 0, until: T + 1_100, wait: 'window' });
  });
});
