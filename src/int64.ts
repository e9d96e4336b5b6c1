/**
 * int64 ids, shared by the reference pet store and the gateway. JavaScript numbers are exact only
 * up to 2^53, so ids live as bigint in memory and as decimal digits on the wire.
 */

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** Up to 19 decimal digits, optionally negative: what parseInt64 reads before checking the range. */
export const DECIMAL_INTEGER = /^-?[0-9]{1,19}$/;

/** Parses a base-10 int64 written as digits only (no sign `+`, exponent or fraction); else undefined. */
export function parseInt64(text: string): bigint | undefined {
  if (!DECIMAL_INTEGER.test(text)) return undefined;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
}

/** An id the pet store hands out or accepts as a category: a positive int64. */
export function isPositiveInt64(value: bigint): boolean {
  return value > 0n && value <= INT64_MAX;
}
