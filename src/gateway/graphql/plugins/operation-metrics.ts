/**
 * Counts GraphQL operations by type and outcome, and logs each at debug level with its name and
 * duration; the line carries the request id. The name is the client's own string: it goes to the
 * log, never into a label (src/gateway/observability/metrics.ts says why).
 */

import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { GatewayContext } from '../context.js';
import type { RequestHooks } from './request-hooks.js';

/** Distinct error codes counted as themselves; the codes come from this server, the bound is a backstop. */
const MAX_OUTCOMES = 50;
/** Longest operation name written to the log as it is. */
const MAX_LOGGED_NAME = 100;

export function operationMetrics(metrics: Metrics, logger: Logger): RequestHooks<GatewayContext> {
  const outcomes = new Set<string>();
  const outcomeOf = (code: unknown): string => {
    if (typeof code !== 'string' || !/^[A-Z][A-Z0-9_]{0,63}$/.test(code)) return 'OTHER';
    if (outcomes.has(code)) return code;
    if (outcomes.size >= MAX_OUTCOMES) return 'OTHER';
    outcomes.add(code);
    return code;
  };
  return {
    willSendResponse({ response, operation: resolved, operationName, request, contextValue }) {
      const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
      const outcome = errors?.length ? outcomeOf(errors[0]?.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'ok';
      // 'none': no operation was resolved (the document did not parse or validate, or names none).
      const type = resolved?.operation ?? 'none';
      metrics.operations.inc({ type, outcome });
      const name = operationName ?? request.operationName;
      const operation = name ? name.slice(0, MAX_LOGGED_NAME) : 'anonymous';
      // The request's own logger when it got a context: its lines carry the request id, and the
      // duration counts from when the context was made.
      if (contextValue === undefined) return logger.debug({ operation, type, outcome }, 'graphql operation');
      const ms = Math.round((performance.now() - contextValue.startedAt) * 10) / 10;
      contextValue.logger.debug({ operation, type, outcome, ms }, 'graphql operation');
    },
  };
}
