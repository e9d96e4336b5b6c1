import { locatedError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { GatewayError, rateLimited } from '../../../src/gateway/errors.js';

describe('GatewayError', () => {
  it('carries its code and message but no stack frames, and leaves the stack limit as it was', () => {
    const before = Error.stackTraceLimit;
    const error = rateLimited(3);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.extensions).toEqual({ code: 'RATE_LIMITED', retryAfter: 3 });
    expect(error.stack).toBe('GraphQLError: the Pet Store rate limit is reached; retry after 3 s');
    expect(Error.stackTraceLimit).toBe(before);
    // Other errors still get their frames.
    expect(new Error('a fault').stack).toMatch(/\n\s+at /);
  });

  it('is located in a response by graphql-js with its code and message', () => {
    const located = locatedError(rateLimited(3), undefined, ['pets']);
    expect(located.path).toEqual(['pets']);
    expect(located.message).toBe('the Pet Store rate limit is reached; retry after 3 s');
    expect(located.extensions.code).toBe('RATE_LIMITED');
    expect(located.originalError).toBeInstanceOf(GatewayError);
  });
});
