import { describe, expect, it } from 'vitest';
import { INT64_MAX, INT64_MIN, isPositiveInt64, parseInt64 } from '../../../src/int64.js';

describe('parseInt64', () => {
  it.each([
    ['0', 0n],
    ['1', 1n],
    ['-1', -1n],
    ['007', 7n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
  ])('reads %s exactly', (text, value) => {
    expect(parseInt64(text)).toBe(value);
  });

  it.each([
    '',
    '-',
    'abc',
    '1.5',
    '1.0',
    '1e3',
    '+1',
    ' 1',
    '1 ',
    '0x10',
    '1_000',
    '9223372036854775808',
    '-9223372036854775809',
    '18446744073709551616',
    '12345678901234567890',
    '99999999999999999999',
  ])('rejects %j', (text) => {
    expect(parseInt64(text)).toBeUndefined();
  });
});

describe('int64 bounds', () => {
  it('are -2^63 and 2^63 - 1', () => {
    expect(INT64_MIN).toBe(-9223372036854775808n);
    expect(INT64_MAX).toBe(9223372036854775807n);
  });

  it.each([
    [1n, true],
    [9007199254740993n, true],
    [INT64_MAX, true],
    [0n, false],
    [-1n, false],
    [INT64_MAX + 1n, false],
  ])('isPositiveInt64(%s) is %s', (value, expected) => {
    expect(isPositiveInt64(value)).toBe(expected);
  });
});
