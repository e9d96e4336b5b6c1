/**
 * The per-key limiter every upstream request goes through (DESIGN.md section 6). The budget store
 * plans when a request may be sent; a bottleneck Group (one limiter per key) runs the sends, with a
 * bounded queue and a cap on concurrent requests per key. A 429 pauses the key until Retry-After
 * and the request is tried again; one that cannot be served within `maxWaitMs` fails at once.
 */

import { createHash } from 'node:crypto';
import Bottleneck from 'bottleneck';
import type { RateWindow } from '../../config.js';
import { rateLimited } from '../errors.js';
import type { BudgetStore, Quota } from './budget.js';
import type { UpstreamResponse } from './client.js';
import { parseRetryAfter } from './retry-after.js';

export interface Limiter {
  /**
   * Runs `attempt` for `key` when the key's budget allows, and again after a 429 (at most
   * `maxRetries` times). Rejects with a RATE_LIMITED GatewayError when the budget cannot serve it in time.
   */
  schedule(key: string, attempt: () => Promise<UpstreamResponse>): Promise<UpstreamResponse>;
  /** The key's budget as far as the gateway knows it, or undefined before any answer. */
  quota(key: string): Quota | undefined;
  close(): Promise<void>;
}

export interface LimiterOptions {
  readonly windows: readonly RateWindow[];
  readonly maxWaitMs: number;
  readonly store: BudgetStore;
  readonly now?: () => number;
  /** Retries after a 429 (default 3). */
  readonly maxRetries?: number;
  /** Requests in flight per key (default 16) and queued per key (default 1000). */
  readonly maxConcurrent?: number;
  readonly maxQueued?: number;
  readonly onEvent?: (event: LimiterEvent) => void;
}

export type LimiterEvent =
  | { readonly type: 'waiting'; readonly delta: 1 | -1 }
  | { readonly type: 'throttled'; readonly waitMs: number }
  | { readonly type: 'heldBack' }
  | { readonly type: 'quota'; readonly keyId: string; readonly quota: Quota }
  | { readonly type: 'internalError'; readonly error: unknown }
  | { readonly type: 'rejected'; readonly reason: 'budget' | 'queue' }
  | { readonly type: 'upstream429'; readonly pauseMs: number };

/** No client-side throttling: each request is sent at once, and a 429 reaches the caller. */
export const passThroughLimiter: Limiter = {
  schedule: (_key, attempt) => attempt(),
  quota: () => undefined,
  close: async () => {},
};

/** How often a request blocked by the upstream's gate asks again (another replica's answer may open it). */
const GATE_POLL_MS = 100;

export function createLimiter(options: LimiterOptions): Limiter {
  const now = options.now ?? Date.now;
  const maxRetries = options.maxRetries ?? 3;
  const quotas = new Map<string, Quota>();
  const throttled = options.windows.length > 0;
  const group = new Bottleneck.Group({
    maxConcurrent: options.maxConcurrent ?? 16,
    highWater: options.maxQueued ?? 1_000,
    strategy: Bottleneck.strategy.OVERFLOW,
    timeout: 10 * 60_000, // a key's limiter is dropped after ten idle minutes
  });
  // Bottleneck emits 'error' for failures in its own machinery; unheard, an EventEmitter would throw.
  group.on('created', (limiter) => limiter.on('error', (error) => options.onEvent?.({ type: 'internalError', error })));

  async function waitForSlot(keyId: string, deadline: number): Promise<number> {
    for (;;) {
      const reservation = await options.store.reserve(keyId, options.windows, now(), deadline);
      const start = now();
      if (reservation.ok) {
        if (reservation.at <= start) return reservation.seq;
        options.onEvent?.({ type: 'throttled', waitMs: reservation.at - start });
        await sleep(reservation.at - start);
        // A 429 seen meanwhile (here or by another replica) stops this send too: plan again.
        if ((await options.store.pausedUntil(keyId)) <= now()) return reservation.seq;
        options.onEvent?.({ type: 'heldBack' });
        await options.store.release(keyId, reservation.seq);
        continue;
      }
      if (reservation.retryAt > deadline) {
        options.onEvent?.({ type: 'rejected', reason: 'budget' });
        throw rateLimited((reservation.retryAt - start) / 1000);
      }
      await sleep(Math.min(GATE_POLL_MS, Math.max(1, reservation.retryAt - start)));
    }
  }

  async function run(keyId: string, attempt: () => Promise<UpstreamResponse>): Promise<UpstreamResponse> {
    const deadline = now() + options.maxWaitMs;
    for (let retry = 0; ; retry++) {
      options.onEvent?.({ type: 'waiting', delta: 1 });
      const seq = await waitForSlot(keyId, deadline).finally(() => options.onEvent?.({ type: 'waiting', delta: -1 }));
      let response: UpstreamResponse;
      try {
        // Bottleneck yields to the timer queue several times per job (about 5 ms, 400 jobs/s per key,
        // measured): worth it where requests are paced anyway, not with throttling off.
        response = throttled ? await group.key(keyId).schedule(attempt) : await attempt();
      } catch (error) {
        await options.store.release(keyId, seq);
        throw error;
      }
      const observed = observation(response, seq, now());
      const quota = await options.store.observe(keyId, observed, now());
      // One entry per key seen; forwarded client keys are unbounded, so the memo is cleared when large.
      if (quotas.size >= 10_000 && !quotas.has(keyId)) quotas.clear();
      quotas.set(keyId, quota);
      if (quota.resetAt !== 0) options.onEvent?.({ type: 'quota', keyId, quota });
      if (response.status !== 429) return response;

      // RFC 6585 section 4 / RFC 9110 section 10.2.3; absent or unreadable: exponential backoff with jitter.
      const retryAfter = parseRetryAfter(header(response, 'retry-after'), now());
      const pauseMs = retryAfter ?? Math.min(60_000, 1_000 * 2 ** retry) * (1 + Math.random() / 2);
      options.onEvent?.({ type: 'upstream429', pauseMs });
      await options.store.pause(keyId, now() + pauseMs);
      if (retry >= maxRetries || now() + pauseMs > deadline) {
        throw rateLimited(pauseMs / 1000);
      }
      options.onEvent?.({ type: 'heldBack' });
    }
  }

  return {
    async schedule(key, attempt) {
      const keyId = keyIdOf(key);
      try {
        return await run(keyId, attempt);
      } catch (error) {
        if (error instanceof Bottleneck.BottleneckError) {
          options.onEvent?.({ type: 'rejected', reason: 'queue' });
          throw rateLimited(1, 'too many requests are queued for this API key; retry shortly');
        }
        throw error;
      }
    },
    quota: (key) => quotas.get(keyIdOf(key)),
    async close() {
      await group.disconnect(false);
      await options.store.close();
    },
  };
}

/** Keys are never stored or logged as such: a short digest names each key's budget. */
export function keyIdOf(key: string): string {
  let id = keyIds.get(key);
  if (id === undefined) {
    id = createHash('sha256').update(key).digest('hex').slice(0, 20);
    // Several lookups per request; a small memo spares the hashing, cleared whole when full.
    if (keyIds.size >= 10_000) keyIds.clear();
    keyIds.set(key, id);
  }
  return id;
}

const keyIds = new Map<string, string>();

function header(response: UpstreamResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The upstream's X-RateLimit-* headers (Reset is Unix seconds); without them, only the end of a probe. */
function observation(response: UpstreamResponse, seq: number, at: number) {
  const limit = Number(header(response, 'x-ratelimit-limit'));
  const remaining = Number(header(response, 'x-ratelimit-remaining'));
  const reset = Number(header(response, 'x-ratelimit-reset'));
  // The spec says a Unix timestamp; a small number can only be seconds from now, as some APIs send.
  const resetAt = reset < 1e9 ? at + reset * 1000 : reset * 1000;
  if (![limit, remaining, reset].every(Number.isFinite) || resetAt <= at) {
    return { seq, limit: 0, remaining: 0, resetAt: 0 };
  }
  return { seq, limit, remaining: response.status === 429 ? 0 : remaining, resetAt };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
