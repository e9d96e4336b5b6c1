/**
 * What a client may see of an error: the gateway's own codes and Apollo's request errors pass;
 * anything unexpected is masked, so no stack, URL or internal message leaves outside development.
 */

import { unwrapResolverError } from '@apollo/server/errors';
import type { GraphQLFormattedError } from 'graphql';
import type { Logger } from '../observability/logger.js';
import { ErrorCode } from './errors.js';

/** Codes whose messages are written for clients: ours, and Apollo Server's request-level ones. */
const CLIENT_CODES = new Set<string>([
  ...Object.values(ErrorCode),
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
]);

export interface FormatOptions {
  /** NODE_ENV=development: everything as it is, stack traces included. */
  readonly development: boolean;
  /** NODE_ENV=production: no "Did you mean …?" hints anywhere (they describe the schema). */
  readonly production: boolean;
  /** Gets every masked error once, with its cause: the client sees none of it. */
  readonly logger?: Pick<Logger, 'error'>;
}

export function formatError(
  formatted: GraphQLFormattedError,
  error: unknown,
  options: FormatOptions,
): GraphQLFormattedError {
  const shown = introspectionSetting(options.production ? withoutHints(formatted) : formatted);
  const code = shown.extensions?.code;
  if (options.development || (typeof code === 'string' && CLIENT_CODES.has(code))) return shown;
  // Apollo Server refuses an automatic persisted query whose hash does not match without a code of
  // its own, so it arrives here as INTERNAL_SERVER_ERROR; it is the client's request that is wrong.
  if (shown.message === 'provided sha does not match query') {
    return { ...shown, extensions: { ...shown.extensions, code: 'BAD_REQUEST' } };
  }
  // graphql-js reports a bad variable or argument value without a code of ours: it is the client's input.
  if (code === undefined && /^Variable "|^Argument "|^Expected value of type/.test(shown.message)) {
    return { ...shown, extensions: { ...shown.extensions, code: ErrorCode.BAD_USER_INPUT } };
  }
  options.logger?.error(
    { err: unwrapResolverError(error), path: shown.path },
    'unexpected error, masked for the client',
  );
  return {
    message: 'Internal server error',
    ...(shown.locations ? { locations: shown.locations } : {}),
    ...(shown.path ? { path: shown.path } : {}),
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  };
}

/** Apollo Server's refusal of introspection names its constructor option; the setting here is INTROSPECTION=true. */
const APOLLO_NO_INTROSPECTION = /^GraphQL introspection is not allowed by Apollo Server\b/;

function introspectionSetting(formatted: GraphQLFormattedError): GraphQLFormattedError {
  if (!APOLLO_NO_INTROSPECTION.test(formatted.message)) return formatted;
  return {
    ...formatted,
    message:
      'GraphQL introspection is off, and the query contained __schema or __type; set INTROSPECTION=true on the gateway to allow it',
  };
}

/** graphql-js's and Apollo's hints name fields and values of the schema: cut in production. */
function withoutHints(formatted: GraphQLFormattedError): GraphQLFormattedError {
  const message = formatted.message.replace(/ ?Did you mean [^?]*\?/g, '');
  return message === formatted.message ? formatted : { ...formatted, message };
}
