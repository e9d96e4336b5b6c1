/**
 * Fixed-window rate limits per key (a minute and a day window, lengths configurable for tests), and
 * the temporary ban of docs/rest-interface.md: a key that sends `banThreshold` requests during one
 * 429 period is banned for `banMs`.
 */

import type { PlanLimits } from './plans.js';

export interface RateLimitOptions {
  /** Length of the "minute" window in ms (default 60 000). */
  readonly minuteMs: number;
  /** Length of the "day" window in ms (default 86 400 000). */
  readonly dayMs: number;
  /** Requests during one 429 period that get a key banned (default 10). */
  readonly banThreshold: number;
  /** Length of a ban in ms (default 15 minutes). */
  readonly banMs: number;
}

/** What the X-RateLimit-* headers say: the window with the fewest requests left. */
export interface Quota {
  readonly limit: number;
  readonly remaining: number;
  /** When that window ends, in ms since the epoch. */
  readonly resetAt: number;
}

export type Admission =
  | { readonly allowed: true; readonly quota: Quota }
  | { readonly allowed: false; readonly banned: boolean; readonly retryAt: number; readonly quota: Quota };

interface WindowState {
  start: number;
  count: number;
}

interface KeyState {
  readonly windows: [WindowState, WindowState];
  /** End of the current 429 period, and how many requests were refused in it. */
  periodEnd: number;
  refused: number;
  bannedUntil: number;
}

export class RateLimiter {
  readonly #options: RateLimitOptions;
  readonly #keys = new Map<string, KeyState>();

  constructor(options: RateLimitOptions) {
    this.#options = options;
  }

  /** Counts one request by `key` at `now` (ms) and says whether it may be served. */
  admit(key: string, limits: PlanLimits, now: number): Admission {
    const state = this.#state(key);
    const windows = this.#windows(state, limits, now);
    if (state.bannedUntil > now) {
      return { allowed: false, banned: true, retryAt: state.bannedUntil, quota: this.#bannedQuota(windows, state) };
    }
    if (state.bannedUntil !== 0) {
      // A served ban wipes the slate: the next refusal starts a new 429 period, not another ban.
      state.bannedUntil = 0;
      state.periodEnd = 0;
      state.refused = 0;
    }
    const exhausted = windows.filter((window) => window.count >= window.limit);
    if (exhausted.length === 0) {
      for (const window of windows) window.state.count++;
      return { allowed: true, quota: tightest(windows) };
    }
    const periodEnd = Math.max(...exhausted.map((window) => window.end));
    if (state.periodEnd !== periodEnd) {
      state.periodEnd = periodEnd;
      state.refused = 0;
    }
    state.refused++;
    if (state.refused >= this.#options.banThreshold) {
      state.bannedUntil = now + this.#options.banMs;
      return { allowed: false, banned: true, retryAt: state.bannedUntil, quota: this.#bannedQuota(windows, state) };
    }
    return { allowed: false, banned: false, retryAt: periodEnd, quota: tightest(windows) };
  }

  #state(key: string): KeyState {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = {
        windows: [
          { start: 0, count: 0 },
          { start: 0, count: 0 },
        ],
        periodEnd: 0,
        refused: 0,
        bannedUntil: 0,
      };
      this.#keys.set(key, state);
    }
    return state;
  }

  #windows(state: KeyState, limits: PlanLimits, now: number): LiveWindow[] {
    const lengths = [this.#options.minuteMs, this.#options.dayMs];
    const caps = [limits.perMinute, limits.perDay];
    return state.windows.map((window, i) => {
      const length = lengths[i] as number;
      // Windows are aligned to the epoch, like the calendar minute and the UTC day.
      const start = Math.floor(now / length) * length;
      if (window.start !== start) {
        window.start = start;
        window.count = 0;
      }
      return { state: window, limit: caps[i] as number, count: window.count, end: start + length };
    });
  }

  #bannedQuota(windows: LiveWindow[], state: KeyState): Quota {
    return { limit: tightest(windows).limit, remaining: 0, resetAt: state.bannedUntil };
  }
}

interface LiveWindow {
  readonly state: WindowState;
  readonly limit: number;
  readonly count: number;
  readonly end: number;
}

/** The window with the fewest requests left; on a tie the one that ends last, as that is when the budget really returns. */
function tightest(windows: LiveWindow[]): Quota {
  let best: Quota | undefined;
  for (const window of windows) {
    const remaining = Math.max(0, window.limit - window.state.count);
    if (
      best === undefined ||
      remaining < best.remaining ||
      (remaining === best.remaining && window.end > best.resetAt)
    ) {
      best = { limit: window.limit, remaining, resetAt: window.end };
    }
  }
  return best as Quota;
}
