/**
 * Keys are never stored or logged as such: a digest names each key's state (budget, shared
 * answers). Replicas sharing Redis must compute the same name for a key, so it is a plain digest;
 * it never appears in anything served over HTTP.
 */

import { createHash } from 'node:crypto';

const memo = new Map<string, string>();
/** Digests remembered; forwarded client keys are unbounded, so the oldest is dropped past this. */
const MEMO_SIZE = 10_000;

/** The digest of `key` (20 hex characters). */
export function keyIdOf(key: string): string {
  let id = memo.get(key);
  if (id === undefined) {
    id = createHash('sha256').update(key).digest('hex').slice(0, 20);
    if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value as string);
    memo.set(key, id);
  }
  return id;
}
