/**
 * The budget's log of sends (src/gateway/upstream/limits/model.ts), against a count by hand: at any
 * time every window holds exactly the sends made within it, and a send is
 * planned exactly when each window has room for it. The log is searched by halves and trimmed in
 * batches (a key near 100,000 a minute holds that many sends), so the count by hand is what keeps
 * those honest. fast-check draws the plans and the times, and shrinks a failure.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answer, newBudget, type Plan, reserve, view } from '../../../../src/gateway/upstream/limits/model.js';

const T = 1_800_000_000_000;

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
      { numRuns: 100 },
    );
  });
});
