/**
 * Counts GraphQL operations by name and outcome (names are bounded so clients cannot explode the
 * label set), and logs each at debug level with its duration; the line carries the request id.
 */

import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { GatewayContext } from '../context.js';
import type { RequestHooks } from './request-hooks.js';

const MAX_NAMES = 200;

export function operationMetrics(metrics: Metrics, logger: Logger): RequestHooks<GatewayContext> {
  const names = new Set<string>();
  const label = (name: string | null | undefined): string => {
    if (!name) return 'anonymous';
    if (names.has(name)) return name;
    if (names.size >= MAX_NAMES || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name)) return 'other';
    names.add(name);
    return name;
  };
  return {
    willSendResponse({ response, operationName, request, contextValue }) {
      const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
      const outcome = errors?.length ? String(errors[0]?.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'ok';
      const operation = label(operationName ?? request.operationName);
      metrics.operations.inc({ operation, outcome });
      // The request's own logger when it got a context: its lines carry the request id, and the
      // duration counts from when the context was made.
      if (contextValue === undefined) return logger.debug({ operation, outcome }, 'graphql operation');
      const ms = Math.round((performance.now() - contextValue.startedAt) * 10) / 10;
      contextValue.logger.debug({ operation, outcome, ms }, 'graphql operation');
    },
  };
}
