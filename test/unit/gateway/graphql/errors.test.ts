import { type FieldNode, type GraphQLResolveInfo, locatedError, type OperationDefinitionNode, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { badUserInput, GatewayError, rateLimited } from '../../../../src/gateway/graphql/errors.js';
import { locating } from '../../../../src/gateway/graphql/resolvers/locating.js';

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

describe('errors located by the resolvers (resolvers/locating.ts)', () => {
  const operation = parse('query Q {\n  list: pets(first: 2) { nodes { id } }\n}')
    .definitions[0] as OperationDefinitionNode;
  const field = operation.selectionSet.selections[0] as FieldNode;
  // What graphql-js hands a resolver, as far as locating reads it.
  const info = {
    fieldNodes: [field],
    path: { prev: undefined, key: 'list', typename: 'Query' },
  } as unknown as GraphQLResolveInfo;

  it("carry the field's locations and path, the same code, message and extensions, and still no stack frames", () => {
    const error = rateLimited(3).at([field], ['list']);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.toJSON()).toEqual({
      message: 'the Pet Store rate limit is reached; retry after 3 s',
      locations: [{ line: 2, column: 3 }],
      path: ['list'],
      extensions: { code: 'RATE_LIMITED', retryAfter: 3 },
    });
    expect(error.stack).toBe('GraphQLError: the Pet Store rate limit is reached; retry after 3 s');
    // graphql-js keeps an error that carries its path: no second error, no stack read.
    expect(locatedError(error, [field], ['list'])).toBe(error);
  });

  it('come out of a resolver that throws or rejects, located at its field', async () => {
    let thrown: unknown;
    try {
      locating(() => {
        throw badUserInput('first must be an integer from 1 to 100');
      })(undefined, {}, {}, info);
    } catch (error) {
      thrown = error;
    }
    const rejected = await locating(async () => {
      throw rateLimited(2);
    })(undefined, {}, {}, info).catch((error: unknown) => error);
    for (const error of [thrown, rejected]) {
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).path).toEqual(['list']);
      expect((error as GatewayError).locations).toEqual([{ line: 2, column: 3 }]);
      expect(locatedError(error, [field], ['list'])).toBe(error);
    }
  });

  it('leave values, other errors and errors already located as they are', async () => {
    expect(locating(() => 7)(undefined, {}, {}, info)).toBe(7);
    await expect(locating(async () => 'pets')(undefined, {}, {}, info)).resolves.toBe('pets');
    const fault = new Error('a fault');
    await expect(
      locating(async () => {
        throw fault;
      })(undefined, {}, {}, info),
    ).rejects.toBe(fault);
    // The very same object (toThrow would compare messages only).
    const elsewhere = rateLimited(1).at([field], ['elsewhere']);
    let thrown: unknown;
    try {
      locating(() => {
        throw elsewhere;
      })(undefined, {}, {}, info);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBe(elsewhere);
  });
});
