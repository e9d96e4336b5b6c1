/**
 * Tells the request's span (tracing.ts) what Apollo Server learnt: the operation's type, name and
 * document hash once it is resolved, and its outcome (first error code) and cost when it is
 * answered. Installed only when tracing is on.
 */

import type { ApolloServerPlugin } from '@apollo/server';
import type { GatewayContext } from '../context.js';

export function tracingPlugin(): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart({ contextValue }) {
      const trace = contextValue?.trace;
      if (trace === undefined) return;
      return {
        async didResolveOperation({ operation, operationName, queryHash }) {
          if (operation)
            trace.describe({ type: operation.operation, name: operationName ?? undefined, hash: queryHash });
        },
        async willSendResponse({ response }) {
          const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
          const code = errors?.length ? String(errors[0]?.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : undefined;
          // A metadata-only request (introspection, _service) has no key and goes nowhere upstream.
          const { operation } = contextValue;
          trace.conclude(
            contextValue.key ? { code, estimated: operation.estimated, actual: operation.sent } : { code },
          );
        },
      };
    },
  };
}
