/**
 * A key the upstream has just refused (401) is refused again from memory for a short while, so a
 * client that repeats a bad key (or sends a new one each time, then repeats them) costs the
 * upstream one request per key, not one per GraphQL request. Bounded in time and in count.
 */

import type { Stage } from '../pipeline.js';
import type { UpstreamResponse } from '../response.js';

export interface RejectedKeysOptions {
  /** How long a refusal is remembered (default 30 s). */
  readonly ttlMs?: number;
  /** Refusals remembered at most; the oldest is dropped past this (default 10,000). */
  readonly maxKeys?: number;
  readonly now?: () => number;
  /** Told of every request answered from memory (metrics). */
  readonly onRemembered?: () => void;
}

export function rejectedKeys(options: RejectedKeysOptions = {}): Stage {
  const ttlMs = options.ttlMs ?? 30_000;
  const maxKeys = options.maxKeys ?? 10_000;
  const now = options.now ?? Date.now;
  const refused = new Map<string, { readonly until: number; readonly response: UpstreamResponse }>();
  return (next) => async (call) => {
    const known = refused.get(call.keyId);
    if (known !== undefined && known.until > now()) {
      options.onRemembered?.();
      return known.response;
    }
    if (known !== undefined) refused.delete(call.keyId);
    const response = await next(call);
    if (response.status === 401) {
      if (refused.size >= maxKeys) refused.delete(refused.keys().next().value as string);
      refused.set(call.keyId, { until: now() + ttlMs, response });
    }
    return response;
  };
}
