import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../../../src/gateway/upstream/limits/retry-after.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

/** Runs `check` with the process's local time zone set to `zone` (Node re-reads TZ when it changes). */
function withTimeZone(zone: string, check: () => void): void {
  const saved = process.env.TZ;
  process.env.TZ = zone;
  try {
    check();
  } finally {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  }
}

describe('parseRetryAfter', () => {
  it('reads delay-seconds as milliseconds from now', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('1', NOW)).toBe(1_000);
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 45 ', NOW)).toBe(45_000);
  });

  it('reads an IMF-fixdate as the time left until it', () => {
    expect(parseRetryAfter('Thu, 15 Jan 2026 12:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Thu, 15 Jan 2026 13:00:00 GMT', NOW)).toBe(3_600_000);
  });

  it('reads the obsolete RFC 850 date form', () => {
    expect(parseRetryAfter('Thursday, 15-Jan-26 12:01:00 GMT', NOW)).toBe(60_000);
  });

  it.each(['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'].map((m, i) => [m, i]))(
    'reads the month %s as month %i of the year',
    (month, index) => {
      const at = Date.UTC(2027, index, 1, 0, 0, 0);
      expect(parseRetryAfter(`Mon, 01 ${month} 2027 00:00:00 GMT`, NOW)).toBe(at - NOW);
    },
  );

  // RFC 9110 section 5.6.7: a two-digit year more than 50 years ahead is the past century's.
  it('reads a two-digit RFC 850 year up to 50 years ahead as this century, and beyond as the last', () => {
    const fifty = Date.UTC(2076, 0, 15, 12, 0, 0);
    expect(parseRetryAfter('Wednesday, 15-Jan-76 12:00:00 GMT', NOW)).toBe(fifty - NOW);
    expect(parseRetryAfter('Friday, 15-Jan-77 12:00:00 GMT', NOW)).toBe(0);
  });

  it('reads the obsolete asctime date form as GMT when the process runs in UTC', () => {
    withTimeZone('UTC', () => expect(parseRetryAfter('Thu Jan 15 12:00:10 2026', NOW)).toBe(10_000));
  });

  // Was a bug (src/gateway/upstream/limits/retry-after.ts): asctime-date carries no zone and means GMT (RFC 9110 section
  // 5.6.7), but Date.parse reads a zone-less date as local time: in New York the wait is 5 hours too long.
  it('reads the obsolete asctime date form as GMT whatever the local time zone', () => {
    withTimeZone('America/New_York', () => expect(parseRetryAfter('Thu Jan 15 12:00:10 2026', NOW)).toBe(10_000));
  });

  it('gives 0 for a date already past, never a negative wait', () => {
    expect(parseRetryAfter('Wed, 14 Jan 2026 12:00:00 GMT', NOW)).toBe(0);
  });

  it('is undefined when absent', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
  });

  it.each(['', 'soon', '-1', '1.5', '1e3', '+5', '0x10', 'abc', 'Thu, 99 Foo 2026 12:00:00 GMT', '5 seconds'])(
    'is undefined for the unreadable value %j',
    (value) => {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    },
  );

  // BUG (src/gateway/upstream/limits/retry-after.ts): any text that starts with three letters goes to Date.parse,
  // which V8 reads leniently: 'junk 2030' becomes 1 January 2030 (a wait of years) and 'abc 1' becomes
  // 2001 (a wait of 0), instead of undefined (unreadable → exponential backoff, docs/architecture.md).
  it.each(['junk 2030', 'abc 1', 'Tomorrow 5', 'May 2'])(
    'is undefined for the garbage %j that only looks like a date to Date.parse',
    (value) => {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    },
  );
});
