/**
 * What a client may see of an error: the gateway's own codes and Apollo's request errors pass;
 * anything unexpected is masked, so no stack, URL or internal message leaves outside development.
 */

import type { GraphQLFormattedError } from 'graphql';
import { ErrorCode } from './errors.js';

/** Codes whose messages are written for clients: ours, and Apollo Server's request-level ones. */
const CLIENT_CODES = new Set<string>([
  ...Object.values(ErrorCode),
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
]);

export function formatError(
  formatted: GraphQLFormattedError,
  _error: unknown,
  development: boolean,
): GraphQLFormattedError {
  const code = formatted.extensions?.code;
  if (development || (typeof code === 'string' && CLIENT_CODES.has(code))) return formatted;
  // Apollo Server refuses an automatic persisted query whose hash does not match without a code of
  // its own, so it arrives here as INTERNAL_SERVER_ERROR; it is the client's request that is wrong.
  if (formatted.message === 'provided sha does not match query') {
    return { ...formatted, extensions: { ...formatted.extensions, code: 'BAD_REQUEST' } };
  }
  // graphql-js reports a bad variable or argument value without a code of ours: it is the client's input.
  if (code === undefined && /^Variable "|^Argument "|^Expected value of type/.test(formatted.message)) {
    return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.BAD_USER_INPUT } };
  }
  return {
    message: 'Internal server error',
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  };
}
