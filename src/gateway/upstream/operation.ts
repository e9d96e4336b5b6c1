/**
 * What one GraphQL operation may spend upstream, and until when: every request it causes draws
 * from one budget (its share of the key's smallest window), no request waits for budget or a
 * connection past `waitUntil`, no attempt runs past `answerBy`, and `signal` says the client left.
 */

import { setMaxListeners } from 'node:events';
import type { Span } from '@opentelemetry/api';
import type { LineLogger } from '../observability/logger.js';
import type { CancelSignal } from '../shared/cancel.js';
import { budgetSpent } from './errors.js';

export interface Operation {
  /** Sent upstream as X-Request-Id; undefined outside a GraphQL request. */
  readonly requestId: string | undefined;
  readonly logger: LineLogger;
  /** Aborted when the client has gone: what it still has queued is dropped, GETs in flight cancelled. */
  readonly signal: CancelSignal | undefined;
  /** Who the client is, for the fair share of a key shared by several clients. */
  readonly clientId: string;
  /** How long the operation may wait for budget or a connection (PETSTORE_MAX_WAIT). */
  readonly maxWaitMs: number;
  /** Epoch ms: waiting for budget or a connection past this fails the request. */
  readonly waitUntil: number;
  /** Epoch ms: no upstream attempt runs past this; the operation is answered by then (plus slack). */
  readonly answerBy: number;
  /** Requests this operation may send (Infinity: no cap). */
  readonly maxRequests: number;
  /** Requests drawn from the budget so far (refunded when one never reached the upstream). */
  charged: number;
  /**
   * Retries after a 429 not drawn from the budget: an operation may always make its first try and
   * one retry (on a small plan its share could hold no retry at all); further ones are charged.
   */
  freeRetries: number;
  /** Requests really sent upstream, 429 retries and resends included: answers shared or cached are 0. */
  sent: number;
  /** Requests the operation was estimated to cost before it ran (`extensions.cost`, `rateLimit.cost`). */
  estimated: number;
  /** The operation's span when tracing is on: its upstream requests' spans are its children. */
  readonly span?: Span | undefined;
}

export interface OperationOptions {
  readonly requestId?: string | undefined;
  readonly logger: LineLogger;
  readonly signal?: CancelSignal | undefined;
  readonly clientId?: string | undefined;
  readonly maxWaitMs: number;
  readonly timeoutMs: number;
  readonly maxRequests?: number | undefined;
  readonly now?: number;
  readonly span?: Span | undefined;
}

export function createOperation(options: OperationOptions): Operation {
  const now = options.now ?? Date.now();
  // Each upstream call of the operation listens to its signal while it waits or is in flight (and
  // stops when it settles): an operation with a dozen calls at once is normal, not a leak, and
  // Node's warning past 10 listeners of an AbortSignal would only fill the log.
  if (options.signal instanceof AbortSignal) setMaxListeners(0, options.signal);
  return {
    requestId: options.requestId,
    logger: options.logger,
    signal: options.signal,
    clientId: options.clientId ?? '',
    maxWaitMs: options.maxWaitMs,
    waitUntil: now + options.maxWaitMs,
    answerBy: now + options.maxWaitMs + options.timeoutMs,
    maxRequests: options.maxRequests ?? Number.POSITIVE_INFINITY,
    charged: 0,
    freeRetries: 1,
    sent: 0,
    estimated: 0,
    span: options.span,
  };
}

/** Draws one request from the operation's budget; throws BUDGET_EXCEEDED when it is spent. */
export function charge(operation: Operation): void {
  if (operation.charged >= operation.maxRequests) {
    throw budgetSpent(operation.maxRequests, operation.charged);
  }
  operation.charged++;
}

/** Whether one more request fits the budget. */
export function canCharge(operation: Operation): boolean {
  return operation.charged < operation.maxRequests;
}

/** Gives back a request that never reached the upstream (refused for budget, dropped, not dispatched). */
export function refund(operation: Operation): void {
  operation.charged = Math.max(0, operation.charged - 1);
}
