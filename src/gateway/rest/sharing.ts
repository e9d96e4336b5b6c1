/**
 * Making every upstream request count: identical GETs in flight for the same key share one
 * request (across GraphQL requests, never across keys), and an optional short-lived per-key cache
 * serves repeats. A write for a key (createPet) drops that key's cached and in-flight GETs, so a
 * read that starts after it never sees the world before it.
 */

import type { UpstreamResponse } from './client.js';
import { keyIdOf } from './limiter.js';

export interface ResponseSharing {
  /** The answer to GET `url` for `key`: joined, cached, or fetched by `fetch`. */
  get(key: string, url: string, fetch: () => Promise<UpstreamResponse>): Promise<UpstreamResponse>;
  /** Forgets everything shared for `key` (after a write). */
  invalidate(key: string): void;
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

export function createResponseSharing(options: SharingOptions): ResponseSharing {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 1_000;
  const inFlight = new Map<string, Promise<UpstreamResponse>>();
  const cache = new Map<string, { expires: number; response: UpstreamResponse }>();

  return {
    get(key, url, fetch) {
      const id = `${keyIdOf(key)} ${url}`;
      const cached = cache.get(id);
      if (cached !== undefined && cached.expires > now()) {
        options.onCacheHit?.();
        return Promise.resolve(cached.response);
      }
      if (cached !== undefined) cache.delete(id);
      const joined = options.coalesce === false ? undefined : inFlight.get(id);
      if (joined !== undefined) {
        options.onCoalesced?.();
        return joined;
      }
      const request = fetch().then((response) => {
        // Only if this request is still the key's current one: a write since has invalidated it.
        if (options.ttlMs > 0 && response.status === 200 && inFlight.get(id) === request) {
          cache.set(id, { expires: now() + options.ttlMs, response });
          if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
        }
        return response;
      });
      inFlight.set(id, request);
      const settle = () => {
        if (inFlight.get(id) === request) inFlight.delete(id);
      };
      request.then(settle, settle);
      return request;
    },

    invalidate(key) {
      const prefix = `${keyIdOf(key)} `;
      for (const id of [...cache.keys()]) if (id.startsWith(prefix)) cache.delete(id);
      for (const id of [...inFlight.keys()]) if (id.startsWith(prefix)) inFlight.delete(id);
    },
  };
}
