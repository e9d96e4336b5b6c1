/**
 * The rules of one key's budget (src/gateway/upstream/limits/model.ts) called directly, at their
 * edges: the probe and the upstream's gate, the last few requests one at a time, the congestion
 * window and the trust it grows from, the 429 backoff, the budget as shown to clients, and when a
 * key may be forgotten. budget.test.ts runs the common cases through every store; these pin the
 * exact values (a Reset reached exactly, the backoff's cap, the window's halving) that a store's
 * tests leave loose. Times are plain numbers; the log's windows are in model.test.ts.
 */

import { describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../../src/config.js';
import {
  type Answer,
  answer,
  holdsBack,
  type KeyBudget,
  NO_ANSWER,
  newBudget,
  type Plan,
  PROBE_MS,
  release,
  reserve,
  room,
  SAFE_CWND,
  view,
} from '../../../../src/gateway/upstream/limits/model.js';
import { bare, said, tooMany } from '../../../helpers/budget-answers.js';

const T = 1_800_000_000_000;
const MINUTE = 60_000;
const planOf = (windows: RateWindow[], share = 1): Plan => ({ windows, share });
const HUNDRED_A_MINUTE = planOf([{ count: 100, windowMs: MINUTE }]);
/** Throttling off: only a 429's pause applies. */
const UNTHROTTLED = planOf([]);

function seqOf(planned: ReturnType<typeof reserve>): number {
  if (!('seq' in planned)) throw new Error(`refused: ${JSON.stringify(planned.room)}`);
  return planned.seq;
}

/** A key past its probe (seq 1, sent and answered at `now`): the upstream said `remaining` left until `resetAt`. */
function opened(plan: Plan, remaining: number, resetAt = T + MINUTE, now = T): KeyBudget {
  const budget = newBudget();
  answer(budget, plan, seqOf(reserve(budget, plan, now)), said(remaining, resetAt), now);
  return budget;
}

describe('the probe and the gate', () => {
  it('starts a key knowing nothing: one probe, whose answer is awaited PROBE_MS before the next', () => {
    const plan = planOf([{ count: 5, windowMs: 1_000 }]);
    const budget = newBudget();
    expect(budget).toEqual({
      log: [],
      seq: 0,
      gate: undefined,
      pausedUntil: 0,
      pauseSeq: 0,
      strikes: 0,
      inflight: new Set(),
      cwnd: SAFE_CWND,
      trusted: false,
    });
    expect(reserve(budget, plan, T)).toEqual({
      seq: 1,
      used: 1,
      room: { free: 0, until: T + PROBE_MS, wait: 'answer' },
    });
    expect(reserve(budget, plan, T + PROBE_MS - 1)).toEqual({
      room: { free: 0, until: T + PROBE_MS, wait: 'answer' },
    });
    // Its gate has run out, but the probe is still out, and the last few go one at a time.
    expect(reserve(budget, plan, T + PROBE_MS)).toEqual({ room: { free: 0, until: T + 2 * PROBE_MS, wait: 'answer' } });
    release(budget, 1);
    expect(reserve(budget, plan, T + PROBE_MS)).toEqual({
      seq: 2,
      used: 1,
      room: { free: 0, until: T + 2 * PROBE_MS, wait: 'answer' },
    });
  });

  it('holds to the upstream’s word until its Reset, and probes again from that very moment', () => {
    const budget = opened(HUNDRED_A_MINUTE, 0, T + 1_000);
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 999)).toEqual({ room: { free: 0, until: T + 1_000, wait: 'gate' } });
    expect(view(budget, HUNDRED_A_MINUTE, T + 999)).toEqual({
      limit: 100,
      remaining: 0,
      used: 100,
      resetAt: T + 1_000,
    });
    expect(view(budget, HUNDRED_A_MINUTE, T + 1_000)).toEqual({
      limit: 100,
      remaining: 99,
      used: 1,
      resetAt: T + MINUTE,
    });
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 1_000)).toEqual({
      seq: 2,
      used: 2,
      room: { free: 0, until: T + 1_000 + PROBE_MS, wait: 'answer' },
    });
  });

  it('says the gate is spent with the send that takes its last request, and a release does not give it back', () => {
    const budget = opened(HUNDRED_A_MINUTE, 1, T + 1_000);
    const last = reserve(budget, HUNDRED_A_MINUTE, T + 1);
    expect(last).toEqual({ seq: 2, used: 2, room: { free: 0, until: T + 1_000, wait: 'gate' } });
    // It may have reached the upstream and counted there.
    release(budget, seqOf(last));
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 2)).toEqual({ room: { free: 0, until: T + 1_000, wait: 'gate' } });
  });

  it('keeps a spent gate across an answer without headers to the request that spent it', () => {
    const budget = opened(HUNDRED_A_MINUTE, 1, T + 1_000);
    answer(budget, HUNDRED_A_MINUTE, seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1)), bare, T + 2);
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 3)).toEqual({ room: { free: 0, until: T + 1_000, wait: 'gate' } });
  });

  it('lets the next request probe at once when the probe got no answer, or one without headers', () => {
    const plan = planOf([{ count: 5, windowMs: 1_000 }]);
    const released = newBudget();
    release(released, seqOf(reserve(released, plan, T)));
    expect(reserve(released, plan, T + 1)).toEqual({
      seq: 2,
      used: 2,
      room: { free: 0, until: T + 1 + PROBE_MS, wait: 'answer' },
    });
    const headerless = newBudget();
    answer(headerless, plan, seqOf(reserve(headerless, plan, T)), bare, T + 1);
    expect(reserve(headerless, plan, T + 1)).toEqual({
      seq: 2,
      used: 2,
      room: { free: 0, until: T + 1 + PROBE_MS, wait: 'answer' },
    });
  });

  it('ends the probe’s wait only for the probe: a late word on an earlier request leaves its time-out', () => {
    const late: ((budget: KeyBudget) => void)[] = [
      (budget) => release(budget, 1),
      (budget) => answer(budget, HUNDRED_A_MINUTE, 1, bare, T + 1_001),
    ];
    for (const word of late) {
      const budget = opened(HUNDRED_A_MINUTE, 0, T + 1_000);
      seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1_000));
      word(budget);
      expect(reserve(budget, HUNDRED_A_MINUTE, T + 1_001)).toEqual({
        room: { free: 0, until: T + 1_000 + PROBE_MS, wait: 'answer' },
      });
    }
  });

  it('opens the gate to the answer’s Remaining less the requests still out, which it may not count yet', () => {
    const budget = opened(HUNDRED_A_MINUTE, 40, T + 1_000);
    reserve(budget, HUNDRED_A_MINUTE, T + 1);
    const answered = seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1));
    answer(budget, HUNDRED_A_MINUTE, answered, said(12, T + 1_000), T + 2);
    expect(view(budget, HUNDRED_A_MINUTE, T + 2)).toEqual({ limit: 100, remaining: 11, used: 89, resetAt: T + 1_000 });
  });

  it('plans only its share of the upstream’s Remaining', () => {
    const half = planOf([{ count: 100, windowMs: MINUTE }], 0.5);
    const budget = opened(half, 14, T + 1_000);
    let planned = 0;
    for (let next = reserve(budget, half, T + 1); 'seq' in next; next = reserve(budget, half, T + 1)) {
      planned++;
      release(budget, next.seq);
    }
    expect(planned).toBe(7);
  });

  it('takes an older answer’s word once the gate it would replace has reached its Reset', () => {
    const budget = opened(HUNDRED_A_MINUTE, 50, T + 1_000);
    const older = seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1));
    const newer = seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1));
    answer(budget, HUNDRED_A_MINUTE, newer, said(40, T + 1_000), T + 2);
    answer(budget, HUNDRED_A_MINUTE, older, said(80, T + 61_000), T + 1_000);
    expect(view(budget, HUNDRED_A_MINUTE, T + 1_000)).toEqual({
      limit: 100,
      remaining: 80,
      used: 20,
      resetAt: T + 61_000,
    });
  });

  it('counts an answer recorded twice once: it does not give back the requests planned since', () => {
    const budget = opened(HUNDRED_A_MINUTE, 10, T + 1_000);
    for (let i = 0; i < 2; i++) release(budget, seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1)));
    answer(budget, HUNDRED_A_MINUTE, 1, said(10, T + 1_000), T + 2);
    expect(view(budget, HUNDRED_A_MINUTE, T + 2)).toEqual({ limit: 100, remaining: 8, used: 92, resetAt: T + 1_000 });
  });

  it('with throttling off plans every request at once, and still learns the upstream’s word to show it', () => {
    const budget = newBudget();
    expect(reserve(budget, UNTHROTTLED, T)).toEqual({
      seq: 1,
      used: 0,
      room: { free: Infinity, until: T, wait: undefined },
    });
    expect(answer(budget, UNTHROTTLED, 1, bare, T)).toBe(0);
    release(budget, seqOf(reserve(budget, UNTHROTTLED, T)));
    expect(answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, T)), said(40, T + 1_000), T)).toBe(0);
    expect(room(budget, UNTHROTTLED, T + 1)).toEqual({ free: Infinity, until: T + 1, wait: undefined });
    expect(view(budget, UNTHROTTLED, T + 1)).toEqual({ limit: 100, remaining: 40, used: 60, resetAt: T + 1_000 });
  });
});

describe('the requests in flight', () => {
  it('lets requests go one at a time from ONE_AT_A_TIME_BELOW left, counting the one just planned', () => {
    const budget = opened(HUNDRED_A_MINUTE, 7);
    const a = reserve(budget, HUNDRED_A_MINUTE, T + 1);
    expect(a).toEqual({ seq: 2, used: 2, room: { free: 3, until: T + 1, wait: undefined } });
    // Five left after it: this one must be answered first.
    const b = reserve(budget, HUNDRED_A_MINUTE, T + 1);
    expect(b).toEqual({ seq: 3, used: 3, room: { free: 0, until: T + 1 + PROBE_MS, wait: 'answer' } });
    release(budget, seqOf(a));
    release(budget, seqOf(b));
    expect(room(budget, HUNDRED_A_MINUTE, T + 2)).toEqual({ free: 1, until: T + 2, wait: undefined });
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 2)).toEqual({
      seq: 4,
      used: 4,
      room: { free: 0, until: T + 2 + PROBE_MS, wait: 'answer' },
    });
  });

  it('plans no more in flight than the congestion window, and says an answer decides when', () => {
    const budget = opened(HUNDRED_A_MINUTE, 50);
    for (let i = 0; i < SAFE_CWND - 1; i++) reserve(budget, HUNDRED_A_MINUTE, T + 1);
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 1)).toEqual({
      seq: SAFE_CWND + 1,
      used: SAFE_CWND + 1,
      room: { free: 0, until: T + 1 + PROBE_MS, wait: 'answer' },
    });
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 1)).toEqual({
      room: { free: 0, until: T + 1 + PROBE_MS, wait: 'answer' },
    });
  });

  it('grows the window by one per answer past SAFE_CWND for an upstream that counts our sends, up to MAX_CWND', () => {
    const plan = planOf([{ count: 100_000, windowMs: MINUTE }]);
    let remaining = 50_000;
    const budget = opened(plan, remaining);
    const answered = (times: number) => {
      for (let i = 0; i < times; i++) {
        answer(budget, plan, seqOf(reserve(budget, plan, T + 1)), said(--remaining, T + MINUTE), T + 1);
      }
      return room(budget, plan, T + 1).free;
    };
    expect(answered(1)).toBe(SAFE_CWND + 1);
    expect(answered(251)).toBe(256);
    expect(answered(50)).toBe(256);
  });

  it('plans no more than the gate leaves when the congestion window would allow more', () => {
    const budget = opened(HUNDRED_A_MINUTE, 90);
    for (const remaining of [89, 88, 87, 86, 85, 8]) {
      answer(budget, HUNDRED_A_MINUTE, seqOf(reserve(budget, HUNDRED_A_MINUTE, T)), said(remaining, T + MINUTE), T);
    }
    // Trusted, the window is 10: nine more could be out, but the gate leaves seven.
    expect(reserve(budget, HUNDRED_A_MINUTE, T)).toEqual({
      seq: 8,
      used: 8,
      room: { free: 7, until: T, wait: undefined },
    });
  });

  it('keeps its trust when a new window reports more left, withdraws it when an answer reports as much', () => {
    const budget = opened(HUNDRED_A_MINUTE, 90);
    const answered = (remaining: number, resetAt = T + MINUTE) => {
      answer(
        budget,
        HUNDRED_A_MINUTE,
        seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1)),
        said(remaining, resetAt),
        T + 1,
      );
      return room(budget, HUNDRED_A_MINUTE, T + 1).free;
    };
    expect([answered(89), answered(88)]).toEqual([SAFE_CWND + 1, SAFE_CWND + 2]);
    expect(answered(95, T + 2 * MINUTE)).toBe(SAFE_CWND + 3);
    expect(answered(95, T + 2 * MINUTE)).toBe(SAFE_CWND);
  });

  it('keeps its trust when two answers both report nothing left: the upstream counted to zero', () => {
    const budget = opened(HUNDRED_A_MINUTE, 90, T + 1_000);
    const out = [1, 2, 3].map(() => seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1)));
    answer(budget, HUNDRED_A_MINUTE, out[0] as number, said(89, T + 1_000), T + 2);
    answer(budget, HUNDRED_A_MINUTE, out[1] as number, said(0, T + 1_000), T + 2);
    answer(budget, HUNDRED_A_MINUTE, out[2] as number, said(0, T + 1_000), T + 2);
    // Trusted, the window went 4, 5, 6, 7: the probe after the Reset makes it 8.
    answer(
      budget,
      HUNDRED_A_MINUTE,
      seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1_000)),
      said(99, T + MINUTE),
      T + 1_000,
    );
    expect(room(budget, HUNDRED_A_MINUTE, T + 1_000)).toEqual({ free: 8, until: T + 1_000, wait: undefined });
  });
});

describe('a 429', () => {
  /** The pauses of `times` 429s in a row, each to the request planned when the previous pause ended. */
  function pausesInARow(times: number, said: (strike: number) => Answer): number[] {
    const budget = newBudget();
    const pauses: number[] = [];
    let now = T;
    for (let strike = 1; strike <= times; strike++) {
      const pauseMs = answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, now)), said(strike), now);
      expect(reserve(budget, UNTHROTTLED, now + pauseMs - 1)).toEqual({
        room: { free: 0, until: now + pauseMs, wait: 'paused' },
      });
      pauses.push(pauseMs);
      now += pauseMs;
    }
    return pauses;
  }

  it('backs off from 1 s, doubling with each 429 in a row up to a minute', () => {
    expect(pausesInARow(8, () => tooMany(undefined))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });

  it('stretches the backoff by up to half with its jitter, the capped one too', () => {
    expect(pausesInARow(7, () => tooMany(undefined, 0.5))).toEqual([
      1_250, 2_500, 5_000, 10_000, 20_000, 40_000, 75_000,
    ]);
  });

  it('waits a Retry-After of 1 s or more as it says, and backs off from one under 1 s', () => {
    const retryAfters = [undefined, 1_000, 999, 0];
    expect(pausesInARow(4, (strike) => tooMany(retryAfters[strike - 1]))).toEqual([1_000, 1_000, 4_000, 8_000]);
  });

  it('treats a request that got no answer as a 429 without Retry-After', () => {
    const silence = { ...bare, status: NO_ANSWER };
    expect(pausesInARow(2, () => silence)).toEqual([1_000, 2_000]);
  });

  it('starts the backoff again after a success, but not after one of a request planned before the 429', () => {
    const budget = newBudget();
    const before = seqOf(reserve(budget, UNTHROTTLED, T));
    const overtaken = seqOf(reserve(budget, UNTHROTTLED, T));
    expect(answer(budget, UNTHROTTLED, before, tooMany(undefined), T)).toBe(1_000);
    expect(answer(budget, UNTHROTTLED, overtaken, bare, T + 1)).toBe(0);
    expect(
      answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, T + 1_000)), tooMany(undefined), T + 1_000),
    ).toBe(2_000);
    answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, T + 3_000)), bare, T + 3_000);
    expect(
      answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, T + 3_000)), tooMany(undefined), T + 3_000),
    ).toBe(1_000);
  });

  it('counts one strike per pause even when a 429 the pause overtook arrives after the next request went', () => {
    const budget = newBudget();
    const first = seqOf(reserve(budget, UNTHROTTLED, T));
    const overtaken = seqOf(reserve(budget, UNTHROTTLED, T));
    answer(budget, UNTHROTTLED, first, tooMany(undefined), T);
    const next = seqOf(reserve(budget, UNTHROTTLED, T + 1_000));
    // It lengthens the pause, as it says, but the next request's 429 is still only the second in a row.
    expect(answer(budget, UNTHROTTLED, overtaken, tooMany(5_000), T + 1_000)).toBe(5_000);
    expect(answer(budget, UNTHROTTLED, next, tooMany(undefined), T + 1_001)).toBe(2_000);
    expect(reserve(budget, UNTHROTTLED, T + 5_999)).toEqual({ room: { free: 0, until: T + 6_000, wait: 'paused' } });
  });

  it('lets no answer to a request planned before it reopen the gate: the next request after the pause probes', () => {
    const budget = opened(HUNDRED_A_MINUTE, 50);
    const first = seqOf(reserve(budget, HUNDRED_A_MINUTE, T));
    const overtaken = seqOf(reserve(budget, HUNDRED_A_MINUTE, T));
    answer(budget, HUNDRED_A_MINUTE, first, tooMany(1_000), T);
    answer(budget, HUNDRED_A_MINUTE, overtaken, said(40, T + MINUTE), T + 1);
    expect(reserve(budget, HUNDRED_A_MINUTE, T + 1_000)).toEqual({
      seq: 4,
      used: 4,
      room: { free: 0, until: T + 1_000 + PROBE_MS, wait: 'answer' },
    });
  });

  it('halves the congestion window once per pause, however many of the requests out it refused', () => {
    const budget = opened(HUNDRED_A_MINUTE, 50);
    const out = [1, 2, 3].map(() => seqOf(reserve(budget, HUNDRED_A_MINUTE, T)));
    answer(budget, HUNDRED_A_MINUTE, out[0] as number, tooMany(1_000), T);
    answer(budget, HUNDRED_A_MINUTE, out[1] as number, tooMany(1_000), T);
    release(budget, out[2] as number);
    // Four halved to two; the probe's answer adds one.
    answer(
      budget,
      HUNDRED_A_MINUTE,
      seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1_000)),
      said(40, T + MINUTE),
      T + 1_000,
    );
    expect(room(budget, HUNDRED_A_MINUTE, T + 1_000)).toEqual({ free: 3, until: T + 1_000, wait: undefined });
  });

  it('withdraws trust: a window grown past SAFE_CWND grows back only to it', () => {
    let remaining = 90;
    const budget = opened(HUNDRED_A_MINUTE, remaining);
    for (let i = 0; i < 6; i++) {
      answer(budget, HUNDRED_A_MINUTE, seqOf(reserve(budget, HUNDRED_A_MINUTE, T)), said(--remaining, T + MINUTE), T);
    }
    expect(room(budget, HUNDRED_A_MINUTE, T).free).toBe(10);
    answer(budget, HUNDRED_A_MINUTE, seqOf(reserve(budget, HUNDRED_A_MINUTE, T)), tooMany(1_000), T);
    answer(
      budget,
      HUNDRED_A_MINUTE,
      seqOf(reserve(budget, HUNDRED_A_MINUTE, T + 1_000)),
      said(80, T + MINUTE),
      T + 1_000,
    );
    expect(room(budget, HUNDRED_A_MINUTE, T + 1_000).free).toBe(SAFE_CWND);
  });
});

describe('the budget as shown', () => {
  const plan = planOf([
    { count: 5, windowMs: 1_000 },
    { count: 100, windowMs: MINUTE },
  ]);

  it('shows the first window as the log has it, and the upstream’s word only when that has less left', () => {
    const budget = newBudget();
    expect(view(budget, plan, T)).toEqual({ limit: 5, remaining: 5, used: 0, resetAt: undefined });
    const probe = seqOf(reserve(budget, plan, T));
    // A probe's gate is no word of the upstream's.
    expect(view(budget, plan, T + 10)).toEqual({ limit: 5, remaining: 4, used: 1, resetAt: T + 1_000 });
    answer(budget, plan, probe, said(4, T + MINUTE, 5), T + 10);
    expect(view(budget, plan, T + 10)).toEqual({ limit: 5, remaining: 4, used: 1, resetAt: T + 1_000 });
    expect(view(budget, plan, T + 1_000)).toEqual({ limit: 5, remaining: 4, used: 1, resetAt: T + MINUTE });
  });

  it('shows nothing left while paused, until the pause ends', () => {
    const budget = newBudget();
    answer(budget, plan, seqOf(reserve(budget, plan, T)), tooMany(2_000), T + 10);
    expect(view(budget, plan, T + 2_009)).toEqual({
      limit: 5,
      remaining: 0,
      used: 0,
      resetAt: T + 2_010,
      paused: true,
    });
    expect(view(budget, plan, T + 2_010)).toEqual({ limit: 5, remaining: 5, used: 0, resetAt: undefined });
  });

  it('shows nothing for a paused key it knows no window of', () => {
    const budget = newBudget();
    answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, T)), tooMany(2_000), T);
    expect(view(budget, UNTHROTTLED, T + 1)).toBeUndefined();
  });
});

describe('whether a key may be forgotten', () => {
  const plan = planOf([
    { count: 2, windowMs: 1_000 },
    { count: 100, windowMs: MINUTE },
  ]);

  it('holds back a key with a request out or a window full, and lets one go that has room', () => {
    expect(holdsBack(newBudget(), plan, T)).toBe(false);
    const budget = opened(plan, 50);
    expect(holdsBack(budget, plan, T)).toBe(false);
    const out = seqOf(reserve(budget, plan, T + 1));
    expect(holdsBack(budget, plan, T + 1)).toBe(true);
    release(budget, out);
    expect(holdsBack(budget, plan, T + 1)).toBe(true);
    expect(holdsBack(budget, plan, T + 1_000)).toBe(false);
  });

  it('holds back a key whose gate is spent until its Reset, and not one with a request left', () => {
    expect(holdsBack(opened(HUNDRED_A_MINUTE, 0, T + 1_000), HUNDRED_A_MINUTE, T + 999)).toBe(true);
    expect(holdsBack(opened(HUNDRED_A_MINUTE, 0, T + 1_000), HUNDRED_A_MINUTE, T + 1_000)).toBe(false);
    const lastOne = opened(HUNDRED_A_MINUTE, 1, T + 1_000);
    expect(holdsBack(lastOne, HUNDRED_A_MINUTE, T)).toBe(false);
    release(lastOne, seqOf(reserve(lastOne, HUNDRED_A_MINUTE, T + 1)));
    expect(holdsBack(lastOne, HUNDRED_A_MINUTE, T + 2)).toBe(true);
  });

  it('holds back a paused key until its pause ends', () => {
    const budget = newBudget();
    answer(budget, UNTHROTTLED, seqOf(reserve(budget, UNTHROTTLED, T)), tooMany(1_000), T);
    expect(holdsBack(budget, UNTHROTTLED, T + 999)).toBe(true);
    expect(holdsBack(budget, UNTHROTTLED, T + 1_000)).toBe(false);
  });
});
