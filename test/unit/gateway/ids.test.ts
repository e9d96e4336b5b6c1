import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/gateway/errors.js';
import { type CursorPosition, decodeCursor, encodeCursor, parseIdArgument } from '../../../src/gateway/ids.js';
import { isPetsPageUrl } from '../../../src/gateway/rest/link.js';

const PREFIX = '/v1/pets';
const BASE = new URL('http://store.test/v1/');
/** The gateway's rule for cursor pages (src/gateway/rest/link.ts), as pets-connection.ts applies it. */
const allowed = (page: string) => isPetsPageUrl(new URL(page, BASE), BASE);

/** A cursor as a client could forge it: base64url of any JSON. */
function forge(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function expectBadUserInput(run: () => unknown): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(GatewayError);
  expect((caught as GatewayError).extensions.code).toBe('BAD_USER_INPUT');
}

describe('parseIdArgument', () => {
  it.each([
    ['1', '1'],
    ['0', '0'],
    ['-1', '-1'],
    ['007', '7'],
    [' 12 ', '12'],
    ['9007199254740993', '9007199254740993'],
    ['9223372036854775807', '9223372036854775807'],
    ['-9223372036854775808', '-9223372036854775808'],
  ])('reads %j as the id %s', (value, id) => {
    expect(parseIdArgument(value, 'id')).toBe(id);
  });

  it.each(['', ' ', 'abc', '1.5', '1e3', '+1', '0x10', '1_000', '9223372036854775808', '-9223372036854775809', '١٢'])(
    'rejects %j with BAD_USER_INPUT',
    (value) => {
      expectBadUserInput(() => parseIdArgument(value, 'id'));
    },
  );

  it('names the field in its message', () => {
    expect(() => parseIdArgument('abc', 'categoryId')).toThrow(/categoryId/);
  });

  it('takes only positive int64 ids when asked to', () => {
    expect(parseIdArgument('1', 'categoryId', true)).toBe('1');
    expect(parseIdArgument('9223372036854775807', 'categoryId', true)).toBe('9223372036854775807');
    for (const value of ['0', '-1', '-0', '9223372036854775808', 'abc']) {
      expectBadUserInput(() => parseIdArgument(value, 'categoryId', true));
    }
  });
});

describe('cursors', () => {
  it.each<CursorPosition>([
    { page: '/v1/pets?limit=20', offset: 0, status: undefined },
    { page: '/v1/pets?limit=3&status=sold&after=9223372036854775806', offset: 2, status: 'sold' },
    { page: '/v1/pets/page/2?size=5', offset: 10_000, status: 'pending' },
  ])('round-trip %j', (position) => {
    const cursor = encodeCursor(position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, allowed)).toEqual(position);
  });

  it('does not show the page or the offset in plain text', () => {
    const cursor = encodeCursor({ page: '/v1/pets?limit=2&after=5', offset: 1, status: undefined });
    expect(cursor).not.toContain('pets');
    expect(cursor).not.toContain('after');
  });

  it.each([
    ['an empty string', ''],
    ['characters outside base64url', 'abc+/='],
    ['a cursor longer than 2048 characters', 'A'.repeat(2049)],
    ['base64url of text that is not JSON', Buffer.from('not json').toString('base64url')],
    ['JSON null', forge(null)],
    ['a JSON number', forge(5)],
    ['a JSON string', forge('/v1/pets')],
    ['no page', forge({ o: 0 })],
    ['a page that is not a string', forge({ p: 5, o: 0 })],
    ['no offset', forge({ p: '/v1/pets?limit=2' })],
    ['a negative offset', forge({ p: '/v1/pets?limit=2', o: -1 })],
    ['a fractional offset', forge({ p: '/v1/pets?limit=2', o: 1.5 })],
    ['an offset above 10000', forge({ p: '/v1/pets?limit=2', o: 10_001 })],
    ['an offset written as a string', forge({ p: '/v1/pets?limit=2', o: '1' })],
    ['a status that is not a string', forge({ p: '/v1/pets?limit=2', o: 0, s: 1 })],
    ['a page outside the pets path', forge({ p: '/v1/orders?limit=2', o: 0 })],
    ['a page on another origin', forge({ p: 'http://evil.test/v1/pets', o: 0 })],
    ['a protocol-relative page', forge({ p: '//evil.test/v1/pets', o: 0 })],
    ['a page that climbs out with ..', forge({ p: '/v1/pets/../admin', o: 0 })],
    [
      'a cursor with its first character changed',
      `f${encodeCursor({ page: '/v1/pets', offset: 1, status: undefined }).slice(1)}`,
    ],
    ['a cursor cut in half', encodeCursor({ page: '/v1/pets?limit=2', offset: 1, status: undefined }).slice(0, 12)],
  ])('rejects %s with BAD_USER_INPUT', (_label, cursor) => {
    expectBadUserInput(() => decodeCursor(cursor, allowed));
  });

  it('enforces the page rule it is given', () => {
    const cursor = encodeCursor({ page: '/v1/pets?limit=2', offset: 0, status: undefined });
    expect(decodeCursor(cursor, allowed).page).toBe('/v1/pets?limit=2');
    const apiBase = new URL('http://store.test/api/v1/');
    expectBadUserInput(() => decodeCursor(cursor, (page) => isPetsPageUrl(new URL(page, apiBase), apiBase)));
  });

  it.each(['/v1/pets/1', '/v1/petsXYZ', '/v1/pets/9223372036854775807?x=1'])(
    'rejects a page that is not a list of pets (%s), such as the deprecated getPet',
    (page) => {
      expectBadUserInput(() => decodeCursor(forge({ p: page, o: 0 }), allowed));
    },
  );

  // BUG (src/gateway/ids.ts decodeCursor): the prefix check looks at the raw text, and `..` is only
  // refused literally. The WHATWG URL parser treats `%2e%2e` (and `.%2E`) as `..`, so
  // new URL('/v1/pets/%2e%2e/%2e%2e/admin', origin) is /admin: a forged cursor makes the gateway
  // GET any path of the upstream origin with the client's or the configured API key.
  it.each(['/v1/pets/%2e%2e/%2e%2e/admin', '/v1/pets/.%2E/secret', '/v1/pets\\%2e%2e/orders'])(
    'never yields a page that resolves outside the prefix (%s)',
    (page) => {
      let resolved: string | undefined;
      try {
        resolved = new URL(decodeCursor(forge({ p: page, o: 0 }), allowed).page, 'http://store.test').pathname;
      } catch (error) {
        expect((error as GatewayError).extensions.code).toBe('BAD_USER_INPUT');
        return;
      }
      expect(resolved.startsWith(PREFIX)).toBe(true);
    },
  );
});
