import { describe, expect, it } from 'vitest';
import { acceptsGzip } from '../../../../src/gateway/graphql/plugins/landing-page/graphiql.js';

describe('acceptsGzip (RFC 9110 section 12.5.3)', () => {
  it.each([
    ['gzip', true],
    ['gzip, deflate, br', true],
    ['br;q=1.0, GZIP;q=0.5', true],
    ['*', true],
    ['gzip;q=0', false],
    ['gzip;q=0.000', false],
    ['identity', false],
    ['br', false],
    ['', false],
    [undefined, false],
  ])('%j → %s', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});
