/**
 * The gateway's own work on each GraphQL request (the upstream estimate, the request's shape, the
 * budget extensions, the operation metrics), as plain functions run by one Apollo Server plugin
 * with one listener made once.
 *
 * Apollo Server runs each hook of a request through every listener of every plugin:
 * `requestDidStart` and most hooks through `Promise.all`, `responseForOperation` one listener after
 * another, each awaited. Four plugins cost four async calls and a listener object each per request,
 * and four promises per hook. Here the concerns stay in their modules; none keeps state per request
 * (what one needs is on the context or the operation node), so the one listener is the same object
 * for every request.
 */

import type {
  ApolloServerPlugin,
  BaseContext,
  GraphQLRequestContextDidResolveOperation,
  GraphQLRequestContextResponseForOperation,
  GraphQLRequestContextWillSendResponse,
  GraphQLRequestListener,
  GraphQLResponse,
} from '@apollo/server';

export interface RequestHooks<TContext extends BaseContext> {
  /** May throw a GraphQLError to refuse the operation before it runs. */
  didResolveOperation?(requestContext: GraphQLRequestContextDidResolveOperation<TContext>): void;
  /** An answer instead of executing the operation, or null to execute it. */
  responseForOperation?(requestContext: GraphQLRequestContextResponseForOperation<TContext>): GraphQLResponse | null;
  willSendResponse?(requestContext: GraphQLRequestContextWillSendResponse<TContext>): void;
}

/** One plugin running `hooks` in order, for every request through the same listener. */
export function requestHooksPlugin<TContext extends BaseContext>(
  hooks: readonly RequestHooks<TContext>[],
): ApolloServerPlugin<TContext> {
  const resolved = hooks.flatMap((each) => (each.didResolveOperation ? [each] : []));
  const responders = hooks.flatMap((each) => (each.responseForOperation ? [each] : []));
  const sending = hooks.flatMap((each) => (each.willSendResponse ? [each] : []));
  const listener: GraphQLRequestListener<TContext> = {
    async didResolveOperation(requestContext) {
      for (const each of resolved) each.didResolveOperation?.(requestContext);
    },
    async responseForOperation(requestContext) {
      for (const each of responders) {
        const response = each.responseForOperation?.(requestContext);
        if (response != null) return response;
      }
      return null;
    },
    async willSendResponse(requestContext) {
      for (const each of sending) each.willSendResponse?.(requestContext);
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
