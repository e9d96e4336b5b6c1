/**
 * A key the upstream has just refused (401) is refused again from memory for a short while, so a
 * client that repeats a bad key (or sends a new one each time, then repeats them) costs the
 * upstream one request per key, not one per GraphQL request. Bounded in time, in count and in
 * bytes: what is kept of a refusal is what answering it again needs, its status and its Error body
 * as a client would see it (json.ts `toErrorBody`: the key scrubbed from each whole string, then cut
 * short; a body over 64 KiB not read). A 401 body is the upstream's to size: kept whole, 45
 * refusals of 7 MB each outgrew a 256 MB heap.
 */

import { stringBytes } from '../../shared/bytes.js';
import { toErrorBody } from '../json.js';
import type { Stage } from '../pipeline.js';
import type { UpstreamResponse } from '../response.js';

export interface RejectedKeysOptions {
  /** How long a refusal is remembered (default 30 s). */
  readonly ttlMs?: number;
  /** Refusals remembered at most; the oldest is dropped past this (default 10,000). */
  readonly maxKeys?: number;
  /** Bytes the remembered refusals may hold together; the oldest is dropped past this (default 4 MiB). */
  readonly maxBytes?: number;
  readonly now?: () => number;
  /** Told of every request answered from memory (metrics). */
  readonly onRemembered?: () => void;
}

/** The entry, the response and its headers, the Map slot (64-bit V8). */
const ENTRY_OVERHEAD = 200;

interface Refusal {
  readonly until: number;
  readonly response: UpstreamResponse;
  readonly bytes: number;
}

export function rejectedKeys(options: RejectedKeysOptions = {}): Stage {
  const ttlMs = options.ttlMs ?? 30_000;
  const maxKeys = options.maxKeys ?? 10_000;
  const maxBytes = options.maxBytes ?? 4 * 1024 * 1024;
  const now = options.now ?? Date.now;
  // Insertion order is age: the first entry is the oldest.
  const refused = new Map<string, Refusal>();
  let bytes = 0;

  function drop(keyId: string): void {
    const known = refused.get(keyId);
    if (known === undefined) return;
    refused.delete(keyId);
    bytes -= known.bytes;
  }

  return (next) => async (call) => {
    const known = refused.get(call.keyId);
    if (known !== undefined && known.until > now()) {
      options.onRemembered?.();
      return known.response;
    }
    if (known !== undefined) drop(call.keyId);
    const response = await next(call);
    if (response.status !== 401) return response;
    // The first answer is the one every repeat gets, so a client sees the same refusal each time.
    const kept = refusal(response, call.key);
    const cost = ENTRY_OVERHEAD + stringBytes(call.keyId) + stringBytes(kept.body);
    drop(call.keyId);
    refused.set(call.keyId, { until: now() + ttlMs, response: kept, bytes: cost });
    bytes += cost;
    while (refused.size > maxKeys || bytes > maxBytes) drop(refused.keys().next().value as string);
    return kept;
  };
}

/**
 * A 401 as it is kept: its status, and the spec's Error body as a client would see it, the key
 * scrubbed out before anything is cut. Any other body is dropped: it would not reach a client anyway.
 */
function refusal(response: UpstreamResponse, key: string): UpstreamResponse {
  const body = toErrorBody(response.body, key);
  return { status: response.status, headers: {}, body: body === undefined ? '' : JSON.stringify(body) };
}
