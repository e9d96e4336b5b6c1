/**
 * How many operations of one API key run at once (PETSTORE_MAX_RUNNING, default 32). The rest wait
 * for their turn before Apollo Server executes them, round-robin across the key's clients as the
 * limiter's turns are, until the operation's wait (PETSTORE_MAX_WAIT) ends or its client leaves.
 *
 * Why: an operation allocates most of what it will (graphql-js's results, Apollo Server's request
 * state, the upstream answer) while it runs, and with 200 connections of one key all running at
 * once each outlived two scavenges and was promoted, so the gateway spent its time in full GCs
 * (the README's "What the numbers say"). One key has 16 upstream connections (server.ts), so 32
 * running keep them busy; more only wait for a connection while holding their memory.
 *
 * An operation waiting for budget gives its place up (`Operation.onBudgetWait`): it may wait up to
 * PETSTORE_MAX_WAIT doing nothing, and the key's requests behind it must still be told at once when
 * the budget cannot serve them (RATE_LIMITED). Waiting for a connection keeps the place.
 */

import { GraphQLError } from 'graphql';
import { tooManyRunning } from './errors.js';
import type { Operation } from './rest/operation.js';
import { createSlots } from './rest/slots.js';

export interface Admission {
  /**
   * The function that ends the operation's turn to run (once, however often called, and also on the
   * operation's first wait for budget): at once when a turn is free, else once one is. Rejects with
   * RATE_LIMITED (HTTP 429) at the operation's `waitUntil`, and with CLIENT_GONE when its client
   * leaves.
   */
  admit(keyId: string, operation: Operation): (() => void) | Promise<() => void>;
  /** Aggregates for metrics: never per key. */
  stats(): { readonly running: number; readonly waiting: number };
}

export function createAdmission(options: {
  readonly perKey: number;
  readonly now?: () => number;
  /** Told of each operation refused at its `waitUntil`. */
  readonly onRefused?: () => void;
}): Admission {
  const running = createSlots({
    total: Number.POSITIVE_INFINITY,
    perKey: options.perKey,
    // No bound of its own: a connection carries one request at a time, so MAX_CONNECTIONS bounds
    // how many wait. A bound per client would refuse a client's burst that the cache answers.
    maxQueuedPerClient: Number.POSITIVE_INFINITY,
    refusal: tooManyRunning,
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    admit(keyId, operation) {
      // Most operations find a turn free: no promise for them.
      const now = running.take(keyId);
      if (now !== undefined) {
        operation.onBudgetWait = now;
        return now;
      }
      const { clientId, waitUntil, signal } = operation;
      return running.acquire(keyId, clientId, waitUntil, signal, options.onRefused).then(
        (leave) => {
          operation.onBudgetWait = leave;
          return leave;
        },
        (error: unknown) => {
          throw signal?.aborted ? clientGone() : error;
        },
      );
    },
    stats: () => ({ running: running.taken, waiting: running.waiting }),
  };
}

/**
 * What an operation whose client left while it waited is refused with. Nobody reads it; it has a
 * code so that it is not logged as a fault of the gateway's, and status 499 (nginx's "client closed
 * request") so that traces do not count it as a server error.
 */
function clientGone(): GraphQLError {
  return new GraphQLError('the client closed the connection', {
    extensions: { code: 'CLIENT_GONE', http: { status: 499 } },
  });
}
