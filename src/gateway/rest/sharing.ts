/**
 * Making every upstream request count: identical GETs in flight for the same key share one
 * request (across GraphQL requests, never across keys), and an optional short-lived per-key cache
 * serves repeats. A write for a key (createPet) drops that key's cached and in-flight GETs, so a
 * read that starts after it never sees the world before it. A shared GET is cancelled only when
 * every operation waiting for it has gone.
 */

import { isWrite, type Stage, type UpstreamCall } from './pipeline.js';
import type { UpstreamResponse } from './response.js';

export interface ResponseSharing {
  readonly stage: Stage;
  /** Forgets everything shared for a key (by digest), after a write. */
  invalidate(keyId: string): void;
}

export interface SharingOptions {
  /** How long a 200 answer is served again; 0 turns the cache off (coalescing stays). */
  readonly ttlMs: number;
  /** Join identical GETs in flight (default true). */
  readonly coalesce?: boolean;
  /** Cached answers kept at most, oldest dropped first (default 1,000). */
  readonly maxEntries?: number;
  readonly now?: () => number;
  readonly onCoalesced?: () => void;
  readonly onCacheHit?: () => void;
}

interface Shared {
  readonly response: Promise<UpstreamResponse>;
  readonly controller: AbortController;
  /** Operations still waiting for it; at 0 the request is cancelled. */
  waiting: number;
}

export function createResponseSharing(options: SharingOptions): ResponseSharing {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 1_000;
  const inFlight = new Map<string, Shared>();
  const cache = new Map<string, { expires: number; response: UpstreamResponse }>();

  /** The shared answer, as one operation waits for it: it stops waiting (and counts out) when its client leaves. */
  function wait(shared: Shared, call: UpstreamCall): Promise<UpstreamResponse> {
    shared.waiting++;
    const { signal } = call;
    if (signal === undefined) return shared.response;
    return new Promise((resolve, reject) => {
      const leave = () => {
        if (--shared.waiting === 0) shared.controller.abort(signal.reason);
        reject(signal.reason);
      };
      if (signal.aborted) return leave();
      signal.addEventListener('abort', leave, { once: true });
      shared.response.then(resolve, reject).finally(() => signal.removeEventListener('abort', leave));
    });
  }

  function read(next: (call: UpstreamCall) => Promise<UpstreamResponse>, call: UpstreamCall) {
    const id = `${call.keyId} ${call.url.href}`;
    const cached = cache.get(id);
    if (cached !== undefined && cached.expires > now()) {
      options.onCacheHit?.();
      return Promise.resolve(cached.response);
    }
    if (cached !== undefined) cache.delete(id);
    const joined = options.coalesce === false ? undefined : inFlight.get(id);
    if (joined !== undefined) {
      options.onCoalesced?.();
      return wait(joined, call);
    }
    const controller = new AbortController();
    const shared: Shared = {
      controller,
      waiting: 0,
      response: next({ ...call, signal: controller.signal }).then((response) => {
        // Only if this request is still the key's current one: a write since has invalidated it.
        if (options.ttlMs > 0 && response.status === 200 && inFlight.get(id) === shared) {
          cache.set(id, { expires: now() + options.ttlMs, response });
          if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
        }
        return response;
      }),
    };
    inFlight.set(id, shared);
    const settle = () => {
      if (inFlight.get(id) === shared) inFlight.delete(id);
    };
    shared.response.then(settle, settle);
    return wait(shared, call);
  }

  function invalidate(keyId: string): void {
    const prefix = `${keyId} `;
    for (const id of [...cache.keys()]) if (id.startsWith(prefix)) cache.delete(id);
    for (const id of [...inFlight.keys()]) if (id.startsWith(prefix)) inFlight.delete(id);
  }

  return {
    stage: (next) => async (call) => {
      if (!isWrite(call)) return read(next, call);
      try {
        return await next(call);
      } finally {
        // Whatever the outcome, the key's shared reads may now describe the catalogue before this write.
        invalidate(call.keyId);
      }
    },
    invalidate,
  };
}
