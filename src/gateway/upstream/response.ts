/** An upstream answer as the REST client's stages pass it along: status, headers, and the whole body. */

export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
  /** Set on an earlier answer served because the upstream could not be asked: how old it is. */
  readonly staleMs?: number;
  /**
   * With answers kept (PETSTORE_CACHE_TTL, PETSTORE_STALE_TTL): the key's write generation read
   * before the answer was asked for. Whatever is learned from it holds only while the key's
   * generation is still this one (sharing/answers.ts).
   */
  readonly generation?: Generation;
}

/**
 * A key's write generation: a token that changes with every write of the key (createPet), compared
 * with `===` only. Numbers in process; strings when replicas share them through Redis.
 */
export type Generation = string | number;

/** A header's value; a repeated header is joined with ", " (RFC 9110 section 5.3), or its first value taken. */
export function headerOf(
  response: UpstreamResponse,
  name: string,
  repeated: 'join' | 'first' = 'join',
): string | undefined {
  const value = response.headers[name];
  if (!Array.isArray(value)) return value;
  return repeated === 'join' ? value.join(', ') : value[0];
}
