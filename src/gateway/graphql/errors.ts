/**
 * The gateway's error codes (the README's "Errors" table) and the one table from an upstream failure
 * (upstream/errors.ts) to a code. Callers branch on `extensions.code`, never on messages.
 */

import { type ASTNode, GraphQLError } from 'graphql';
import type { RestClient } from '../upstream/client.js';
import { type Outcome, UpstreamError, type UpstreamErrorBody } from '../upstream/errors.js';

export type { UpstreamErrorBody };

export const ErrorCode = {
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  RATE_LIMITED: 'RATE_LIMITED',
  UPSTREAM_UNAVAILABLE: 'UPSTREAM_UNAVAILABLE',
  UPSTREAM_BUDGET_EXCEEDED: 'UPSTREAM_BUDGET_EXCEEDED',
  PERSISTED_QUERY_NOT_IN_LIST: 'PERSISTED_QUERY_NOT_IN_LIST',
  QUERY_NOT_IN_SAFELIST: 'QUERY_NOT_IN_SAFELIST',
  /** Apollo Server's code for a request it cannot read; ours where the trusted-documents door refuses one. */
  BAD_REQUEST: 'BAD_REQUEST',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * A GraphQL error with a stable `extensions.code`; `httpStatus` is set only where the whole response
 * takes it. An answer to the client, not a fault of the gateway's: it carries no stack trace. Under
 * Apollo Server's async chain, capturing one (and formatting it, which graphql-js makes happen when
 * it locates the error in the response) took ~40 µs per error, on the paths a hostile client or a
 * 429 storm drives hardest: refused keys, rate limits, an upstream that is down.
 */
export class GatewayError extends GraphQLError {
  readonly code: ErrorCode;

  constructor(
    code: ErrorCode,
    message: string,
    extensions: Record<string, unknown> = {},
    httpStatus?: number,
    at?: { readonly nodes: readonly ASTNode[]; readonly path: readonly (string | number)[] },
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message, {
        ...at,
        extensions: { code, ...extensions, ...(httpStatus === undefined ? {} : { http: { status: httpStatus } }) },
      });
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = code;
  }

  /**
   * This error as the response reports it at a field (`nodes`, `path`): the same code, message and
   * extensions. graphql-js keeps an error that carries a path as it is; one without, it wraps in a
   * new GraphQLError, which captures a stack and reads the stack of ours (resolvers/locating.ts).
   */
  at(nodes: readonly ASTNode[], path: readonly (string | number)[]): GatewayError {
    return new GatewayError(this.code, this.message, this.extensions, undefined, { nodes, path });
  }
}

/** `httpStatus` when the whole request is refused before execution. */
export function badUserInput(message: string, upstream?: UpstreamErrorBody, httpStatus?: number): GatewayError {
  return new GatewayError(ErrorCode.BAD_USER_INPUT, message, upstream ? { upstream } : {}, httpStatus);
}

/**
 * `outcome`, for a write (createPet): `unknown` when the request reached the upstream and no
 * usable answer came (the pet may exist: look it up before retrying), `not_sent` when it never left.
 */
export function upstreamUnavailable(message: string, outcome?: Outcome): GatewayError {
  return new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, message, outcome === undefined ? {} : { outcome });
}

export function rateLimited(retryAfterSeconds: number, message?: string): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterSeconds));
  return new GatewayError(
    ErrorCode.RATE_LIMITED,
    message ?? `the Pet Store rate limit is reached; retry after ${retryAfter} s`,
    { retryAfter },
  );
}

/**
 * One operation may spend at most its share of the key's budget: refused before execution when its
 * estimate is over (`estimated`), or a field that would go past it while running (`spent`).
 */
export function budgetExceeded(
  max: number,
  found: { readonly estimated: number } | { readonly spent: number },
  httpStatus?: number,
): GatewayError {
  if ('estimated' in found) {
    return new GatewayError(
      ErrorCode.UPSTREAM_BUDGET_EXCEEDED,
      `this operation would cost about ${found.estimated} upstream requests; one operation may spend at most ${max}: split it`,
      { estimatedUpstreamRequests: found.estimated, maxUpstreamRequests: max },
      httpStatus,
    );
  }
  return new GatewayError(
    ErrorCode.UPSTREAM_BUDGET_EXCEEDED,
    `this operation has spent its ${max} upstream requests; this field needs more: ask for less in one operation`,
    { spentUpstreamRequests: found.spent, maxUpstreamRequests: max },
  );
}

/** No credential at all: the whole HTTP response is a 401 (the README's "Errors" table). */
export function missingCredential(
  message = 'no API key: send Authorization: Bearer <key>, or configure PETSTORE_API_KEY',
): GatewayError {
  return new GatewayError(ErrorCode.UNAUTHENTICATED, message, {}, 401);
}

/** Longest part of a client's document id repeated in an error message. */
const MAX_ECHOED_ID = 80;

/**
 * A document id (`documentId`, or an APQ hash under PERSISTED_DOCUMENTS_ONLY) the manifest does not
 * list. Apollo Router's code, message and status (404, since its PR #4887): the id names nothing here.
 * Without a manifest at all (`served` false) the message says so, and how to serve one: the client
 * is then not wrong, the gateway is started without what it needs.
 */
export function persistedQueryNotInList(id: string, served = true): GatewayError {
  const quoted = `'${id.slice(0, MAX_ECHOED_ID)}'`;
  return new GatewayError(
    ErrorCode.PERSISTED_QUERY_NOT_IN_LIST,
    served
      ? `Persisted query ${quoted} not found in the persisted query list`
      : `Persisted query ${quoted} not found: this gateway serves no persisted documents; start it with PERSISTED_DOCUMENTS=<path of a persisted-documents manifest> (npm run codegen writes one)`,
    {},
    404,
  );
}

/** PERSISTED_DOCUMENTS_ONLY and a freeform document that is not a listed one: Apollo Router's code, message and 403. */
export function queryNotInSafelist(): GatewayError {
  return new GatewayError(
    ErrorCode.QUERY_NOT_IN_SAFELIST,
    'The operation body was not found in the persisted query safelist',
    {},
    403,
  );
}

/** A request that cannot be read as one operation (Apollo Server's code and status for those). */
export function badRequest(message: string): GatewayError {
  return new GatewayError(ErrorCode.BAD_REQUEST, message, {}, 400);
}

/** The one table from an upstream failure to the error the client sees. */
export function fromUpstream(error: UpstreamError): GatewayError {
  switch (error.code) {
    case 'RATE_LIMITED':
      return rateLimited(error.retryAfterSeconds ?? 1, error.message);
    case 'BUDGET_EXCEEDED':
      return budgetExceeded(error.maxRequests ?? 0, { spent: error.spent ?? 0 });
    case 'UNAVAILABLE':
      return upstreamUnavailable(error.message, error.outcome);
    case 'REFUSED':
      return fromRefusal(error.status ?? 400, error.body);
  }
}

function fromRefusal(status: number, body: UpstreamErrorBody | undefined): GatewayError {
  if (status === 400 || status === 422) {
    return badUserInput(body?.message ? `the Pet Store rejected the input: ${body.message}` : 'invalid input', body);
  }
  if (status === 401 || status === 403) {
    const extensions = body ? { upstream: body } : {};
    return new GatewayError(ErrorCode.UNAUTHENTICATED, 'the Pet Store did not accept the API key', extensions);
  }
  return upstreamUnavailable(`the Pet Store answered HTTP ${status}`);
}

/** `error` as the client sees it: an upstream failure mapped to its code, anything else as it is. */
export function toClientError(error: unknown): unknown {
  return error instanceof UpstreamError ? fromUpstream(error) : error;
}

function rethrow(error: unknown): never {
  throw toClientError(error);
}

/** `client` with every failure mapped to the gateway's codes: the REST client the resolvers and loaders use. */
export function withClientErrors(client: RestClient): RestClient {
  return {
    ...client,
    listPets: (key, page) => client.listPets(key, page).catch(rethrow),
    createPet: (key, pet) => client.createPet(key, pet).catch(rethrow),
    getPet: (key, id) => client.getPet(key, id).catch(rethrow),
    forOperation: (operation) => withClientErrors(client.forOperation(operation)),
  };
}
