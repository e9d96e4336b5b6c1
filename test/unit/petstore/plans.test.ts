import { describe, expect, it } from 'vitest';
import { PLANS, parseKeys } from '../../../src/petstore/plans.js';

describe('parseKeys', () => {
  it('reads key:plan entries for every plan', () => {
    const keys = parseKeys('a-free:free,b.pro:pro,c_business:business,d~enterprise:enterprise');
    expect([...keys]).toEqual([
      ['a-free', { plan: 'free', limits: { perMinute: 60, perDay: 1_000 } }],
      ['b.pro', { plan: 'pro', limits: { perMinute: 300, perDay: 10_000 } }],
      ['c_business', { plan: 'business', limits: { perMinute: 1_000, perDay: 100_000 } }],
      ['d~enterprise', { plan: 'enterprise', limits: PLANS.enterprise }],
    ]);
  });

  it('reads an enterprise key with its own per-minute and per-day limits', () => {
    expect(parseKeys('contract:enterprise=5000/200000').get('contract')).toEqual({
      plan: 'enterprise',
      limits: { perMinute: 5_000, perDay: 200_000 },
    });
  });

  it('trims white space around entries and skips empty ones', () => {
    const keys = parseKeys(' a:free , ,b:pro,\n');
    expect([...keys.keys()]).toEqual(['a', 'b']);
  });

  it('accepts keys made of the bearer token characters', () => {
    expect([...parseKeys('AbC+/9.x_y~z-0:pro').keys()]).toEqual(['AbC+/9.x_y~z-0']);
  });

  it.each([
    ['a key without a plan', 'sekrit-key-1', 1],
    ['an unknown plan', 'ok:free,sekrit-key-2:gold', 2],
    ['a plan in capitals', 'ok:free,ok2:pro,sekrit-key-3:PRO', 3],
    ['a key with white space inside', 'sekrit key-4:free', 1],
    ['an empty key', ':free', 1],
    ['custom limits on a non-enterprise plan', 'sekrit-key-5:pro=5/6', 1],
    ['custom limits of zero', 'ok:free,sekrit-key-6:enterprise=0/5', 2],
    ['a per-day limit of zero', 'sekrit-key-7:enterprise=5/0', 1],
    ['only one custom limit', 'sekrit-key-8:enterprise=5', 1],
    ['negative custom limits', 'sekrit-key-9:enterprise=-5/6', 1],
    ['a key longer than 200 characters', `${'k'.repeat(201)}:free`, 1],
  ])('rejects %s, naming the entry number but not the key', (_case, text, entry) => {
    let message = '';
    try {
      parseKeys(text);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(new RegExp(`\\bentry ${entry}\\b`));
    expect(message).not.toContain('sekrit');
    expect(message).not.toContain('kkkkk');
  });

  it.each(['', ' ', ',', ' , , '])('rejects %j as naming no key', (text) => {
    expect(() => parseKeys(text)).toThrow('PETSTORE_KEYS names no key');
  });
});
