import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/gateway/graphql/errors.js';
import { type CursorPosition, createCursorCodec, parseIdArgument } from '../../../../src/gateway/graphql/ids.js';

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
  const codec = createCursorCodec('a test secret of enough length');
  const cursors = codec.forKey('key-digest-a');

  it.each<CursorPosition>([
    { page: '/v1/pets?limit=20', offset: 0, status: undefined },
    { page: '/v1/pets?limit=3&status=sold&after=9223372036854775806', offset: 2, status: 'sold' },
    { page: '/v1/pets?size=5&key=secret-api-key', offset: 10_000, status: 'pending' },
  ])('round-trip %j', (position) => {
    const cursor = cursors.encode(position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursors.decode(cursor)).toEqual(position);
  });

  it('shows nothing of the page in any encoding: a link that carries the API key never reaches a client', () => {
    const cursor = cursors.encode({
      page: '/v1/pets?limit=2&after=5&apikey=secret-api-key',
      offset: 1,
      status: 'sold',
    });
    for (const text of [cursor, Buffer.from(cursor, 'base64url').toString('latin1')]) {
      for (const hidden of ['pets', 'after', 'secret-api-key', 'sold']) expect(text).not.toContain(hidden);
    }
  });

  it('gives one cursor per position, the same every time', () => {
    const position = { page: '/v1/pets?limit=2&after=5', offset: 1, status: undefined };
    expect(cursors.encode(position)).toBe(cursors.encode(position));
    expect(cursors.encode(position)).not.toBe(cursors.encode({ ...position, offset: 0 }));
  });

  it('refuses a cursor made for another API key, or with another secret', () => {
    const position = { page: '/v1/pets?limit=2', offset: 0, status: undefined };
    expectBadUserInput(() => codec.forKey('key-digest-b').decode(cursors.encode(position)));
    expectBadUserInput(() =>
      createCursorCodec('another secret, long enough').forKey('key-digest-a').decode(cursors.encode(position)),
    );
  });

  it('accepts the cursors of another replica with the same secret', () => {
    const position = { page: '/v1/pets?limit=2', offset: 1, status: undefined };
    const replica = createCursorCodec('a test secret of enough length').forKey('key-digest-a');
    expect(replica.decode(cursors.encode(position))).toEqual(position);
  });

  it('reads the cursors the gateway has always made for a secret: replicas mid-upgrade, and clients, keep theirs', () => {
    // Sealed by the codec as it was when its keys were Buffers rather than KeyObjects: the same
    // secret, key and position must keep giving, and reading, exactly this cursor.
    const before =
      'V9oKPJPPVHOGjvbvKm8QrJLNyYrgS0i6zSC08v7RRLnmbEqrcEGtN9mKnCY-YSB2XzqlGNS3D7Cv-g0oC583EOpNax_WoD0ok3cK3b358h9HrQ';
    const position = { page: '/v1/pets?limit=2&after=5', offset: 1, status: 'available' };
    const fixed = createCursorCodec('a fixed secret for this test').forKey('key-digest');
    expect(fixed.encode(position)).toBe(before);
    expect(fixed.decode(before)).toEqual(position);
  });

  const valid = cursors.encode({ page: '/v1/pets?limit=2', offset: 1, status: undefined });
  it.each([
    ['an empty string', ''],
    ['characters outside base64url', 'abc+/='],
    ['a cursor longer than 2048 characters', 'A'.repeat(2049)],
    ['base64url of text that is not JSON', Buffer.from('not json').toString('base64url')],
    ['a forged JSON cursor of the old, unsealed kind', forge({ p: '/v1/pets?limit=2', o: 0 })],
    ['a forged cursor naming another path', forge({ p: '/v1/orders?limit=2', o: 0 })],
    ['a cursor with its first character changed', `${valid[0] === 'A' ? 'B' : 'A'}${valid.slice(1)}`],
    ['a cursor with its last character changed', `${valid.slice(0, -1)}${valid.at(-1) === 'A' ? 'B' : 'A'}`],
    ['a cursor cut in half', valid.slice(0, valid.length / 2)],
    ['a cursor with a byte added', `${valid}A`],
  ])('rejects %s with BAD_USER_INPUT', (_label, cursor) => {
    expectBadUserInput(() => cursors.decode(cursor));
  });

  it('flips no bit unnoticed', () => {
    const bytes = Buffer.from(valid, 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      const flipped = Buffer.from(bytes);
      flipped[i] = (flipped[i] as number) ^ 1;
      expectBadUserInput(() => cursors.decode(flipped.toString('base64url')));
    }
  });
});
