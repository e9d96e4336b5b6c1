/**
 * Retry-After (RFC 9110 section 10.2.3): `delay-seconds` or an `HTTP-date`. Returns the wait in
 * ms from `now`, or undefined when the value is absent or unreadable (the caller then backs off).
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  // HTTP-date: IMF-fixdate, or the obsolete RFC 850 and asctime forms, all of which Date.parse reads.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
