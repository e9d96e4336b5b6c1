/**
 * What went wrong with an upstream request, in the REST client's own terms. Nothing here knows
 * GraphQL: the GraphQL layer maps each code to the one a client sees (graphql/errors.ts,
 * `fromUpstream`), so this layer can be read, tested and reused as a REST client alone.
 */

/** The spec's Error body, when the upstream sent one. */
export interface UpstreamErrorBody {
  readonly code: string;
  readonly message: string;
  readonly status: number;
}

export type UpstreamErrorCode =
  /** No budget within the operation's wait, a queue full, or a 429 that outlasted its retries. */
  | 'RATE_LIMITED'
  /** No usable answer: a connection refused or reset, a timeout, a 5xx, a body that is not the documented JSON. */
  | 'UNAVAILABLE'
  /** The operation has spent every request its share of the key's budget allows. */
  | 'BUDGET_EXCEEDED'
  /** The upstream refused the request itself (4xx other than 429): see `status` and `body`. */
  | 'REFUSED';

/**
 * Whether a write that failed may have had its effect upstream: `unknown` when it reached the
 * upstream and no usable answer came (a timeout or a reset after it was written, a 5xx, a success
 * whose body is unreadable: the pet may exist), `not_sent` when it never left the gateway (a
 * connection refused, too little time left to wait for an answer, dropped while it waited).
 */
export type Outcome = 'unknown' | 'not_sent';

export interface UpstreamErrorDetails {
  readonly retryAfterSeconds?: number | undefined;
  readonly status?: number | undefined;
  readonly body?: UpstreamErrorBody | undefined;
  readonly maxRequests?: number | undefined;
  readonly spent?: number | undefined;
  readonly outcome?: Outcome | undefined;
}

/**
 * An upstream failure. It carries no stack trace: it is an answer about the upstream, not a fault of
 * ours, and capturing one cost ~40 µs on the paths a hostile client or a 429 storm drives hardest.
 */
export class UpstreamError extends Error {
  readonly code: UpstreamErrorCode;
  readonly retryAfterSeconds: number | undefined;
  readonly status: number | undefined;
  readonly body: UpstreamErrorBody | undefined;
  readonly maxRequests: number | undefined;
  readonly spent: number | undefined;
  readonly outcome: Outcome | undefined;

  constructor(code: UpstreamErrorCode, message: string, details: UpstreamErrorDetails = {}) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = code;
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.status = details.status;
    this.body = details.body;
    this.maxRequests = details.maxRequests;
    this.spent = details.spent;
    this.outcome = details.outcome;
  }
}

/** The key's budget cannot serve the request in time; retry after `retryAfterSeconds` (at least 1). */
export function rateLimited(retryAfterSeconds: number, message?: string): UpstreamError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterSeconds));
  return new UpstreamError(
    'RATE_LIMITED',
    message ?? `the Pet Store rate limit is reached; retry after ${retryAfter} s`,
    { retryAfterSeconds: retryAfter },
  );
}

export function unavailable(message: string, outcome?: Outcome): UpstreamError {
  return new UpstreamError('UNAVAILABLE', message, outcome === undefined ? {} : { outcome });
}

/** `error` saying what became of its write; as it is when it says so already or is not UNAVAILABLE. */
export function withOutcome(error: UpstreamError, outcome: Outcome): UpstreamError {
  if (error.code !== 'UNAVAILABLE' || error.outcome !== undefined) return error;
  const { retryAfterSeconds, status, body, maxRequests, spent } = error;
  return new UpstreamError(error.code, error.message, { retryAfterSeconds, status, body, maxRequests, spent, outcome });
}

export function budgetSpent(maxRequests: number, spent: number): UpstreamError {
  return new UpstreamError('BUDGET_EXCEEDED', `this operation has spent its ${maxRequests} upstream requests`, {
    maxRequests,
    spent,
  });
}

/**
 * An answer that is not a success, as an error: a 429 that persisted after the limiter's retries
 * (`retryAfterSeconds`), a 5xx (the upstream is unavailable), or a refusal of the request itself.
 */
export function fromStatus(status: number, body: UpstreamErrorBody | undefined, retryAfterSeconds = 1): UpstreamError {
  if (status === 429) return rateLimited(retryAfterSeconds);
  if (status >= 400 && status < 500) {
    return new UpstreamError('REFUSED', `the Pet Store refused the request with HTTP ${status}`, { status, body });
  }
  return new UpstreamError('UNAVAILABLE', `the Pet Store answered HTTP ${status}`, { status });
}
