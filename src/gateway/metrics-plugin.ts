/** Counts GraphQL operations by name and outcome; names are bounded so clients cannot explode the label set. */

import type { ApolloServerPlugin } from '@apollo/server';
import type { GatewayContext } from './context.js';
import type { Metrics } from './metrics.js';

const MAX_NAMES = 200;

export function operationMetricsPlugin(metrics: Metrics): ApolloServerPlugin<GatewayContext> {
  const names = new Set<string>();
  const label = (name: string | null | undefined): string => {
    if (!name) return 'anonymous';
    if (names.has(name)) return name;
    if (names.size >= MAX_NAMES || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name)) return 'other';
    names.add(name);
    return name;
  };
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, operationName, request }) {
          const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
          const outcome = errors?.length ? String(errors[0]?.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'ok';
          metrics.operations.inc({ operation: label(operationName ?? request.operationName), outcome });
        },
      };
    },
  };
}
