/**
 * The upstream's rate-limit headers, trusted within bounds. `X-RateLimit-Limit/Remaining/Reset`
 * (the spec's names; Reset is a Unix time in seconds, and read in the other units APIs send too)
 * and `Retry-After` (RFC 9110 section 10.2.3, delay-seconds or an HTTP-date) come from a server we
 * do not control: a value that would lock a key for decades is clamped to `maxMs` from now, and a
 * Reset in the past describes a window that is over, so it says nothing about the one in force.
 */

import { headerOf, type UpstreamResponse } from '../response.js';
import { parseRetryAfter } from './retry-after.js';

/** What the headers say of the key's tightest window; `resetAt` 0 when they say nothing usable. */
export interface RateHeaders {
  readonly limit: number;
  readonly remaining: number;
  /** Epoch ms. */
  readonly resetAt: number;
  /** A value was out of bounds and clamped (the caller warns once per key). */
  readonly clamped: boolean;
}

const NOTHING: RateHeaders = { limit: 0, remaining: 0, resetAt: 0, clamped: false };

/**
 * Below this, a Reset is read as seconds from now (some APIs send that); above it, as a Unix time.
 * 10^8 s is three years: no window is that long, and no Unix time since 1973 is that small.
 */
const DELTA_SECONDS_BELOW = 1e8;
/**
 * From this on, a Reset is read as a Unix time in milliseconds (some APIs send `Date.now()`). In
 * seconds, 10^11 is the year 5138; in milliseconds, March 1973: no real Reset is ambiguous. Read
 * as seconds, an epoch-ms Reset lies 50,000 years ahead, and the clamp held the key for all of
 * PETSTORE_MAX_RETRY_AFTER (an hour) though the window ended seconds later.
 */
const EPOCH_MS_FROM = 1e11;

export function readRateHeaders(response: UpstreamResponse, now: number, maxMs: number): RateHeaders {
  const limit = integer(headerOf(response, 'x-ratelimit-limit', 'first'));
  const remaining = integer(headerOf(response, 'x-ratelimit-remaining', 'first'));
  const reset = integer(headerOf(response, 'x-ratelimit-reset', 'first'));
  if (limit === undefined || limit < 1 || remaining === undefined || reset === undefined) return NOTHING;
  const resetAt = reset < DELTA_SECONDS_BELOW ? now + reset * 1000 : reset < EPOCH_MS_FROM ? reset * 1000 : reset;
  if (resetAt <= now) return NOTHING;
  const clamped = resetAt > now + maxMs;
  return {
    limit,
    // A 429 leaves nothing in the window, whatever else the headers claim.
    remaining: response.status === 429 ? 0 : Math.min(remaining, limit),
    resetAt: clamped ? now + maxMs : resetAt,
    clamped,
  };
}

/** How long a 429 asks to wait, clamped to `maxMs`; undefined when absent or unreadable. */
export function readRetryAfter(
  response: UpstreamResponse,
  now: number,
  maxMs: number,
): { readonly ms: number; readonly clamped: boolean } | undefined {
  const ms = parseRetryAfter(headerOf(response, 'retry-after', 'first'), now);
  if (ms === undefined) return undefined;
  return ms > maxMs ? { ms: maxMs, clamped: true } : { ms, clamped: false };
}

function integer(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*[0-9]{1,16}\s*$/.test(value)) return undefined;
  return Number(value);
}
