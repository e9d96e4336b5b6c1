/**
 * What the budget stores are told of an upstream's answer, as the budget tests write it, and the
 * sequence number of a reservation that must have been planned.
 */

import type { Reservation } from '../../src/gateway/upstream/limits/budget.js';
import type { Answer } from '../../src/gateway/upstream/limits/model.js';

/** An answer with X-RateLimit-* headers. */
export const said = (remaining: number, resetAt: number, limit = 100): Answer => ({
  status: 200,
  word: { limit, remaining, resetAt },
  retryAfterMs: undefined,
  jitter: 0,
});

/** An answer without usable rate-limit headers. */
export const bare: Answer = {
  status: 200,
  word: { limit: 0, remaining: 0, resetAt: 0 },
  retryAfterMs: undefined,
  jitter: 0,
};

/** A 429, with its Retry-After in ms (undefined: none). */
export const tooMany = (retryAfterMs: number | undefined, jitter = 0): Answer => ({
  ...bare,
  status: 429,
  retryAfterMs,
  jitter,
});

export function seqOf(reservation: Reservation): number {
  if (!reservation.ok) throw new Error(`refused: ${JSON.stringify(reservation.room)}`);
  return reservation.seq;
}
