/** Puts the key's budget, as far as the gateway knows it, into every GraphQL response: `extensions.rateLimit`. */

import type { ApolloServerPlugin } from '@apollo/server';
import type { GatewayContext } from './context.js';
import type { Limiter } from './rest/limiter.js';

export function rateLimitExtension(limiter: Limiter): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, contextValue }) {
          // No context when the request was refused before one was built (no credential).
          if (response.body.kind !== 'single' || !contextValue?.key) return;
          const quota = limiter.quota(contextValue.key);
          if (quota === undefined || quota.resetAt === 0) return;
          response.body.singleResult.extensions = {
            ...response.body.singleResult.extensions,
            rateLimit: {
              limit: quota.limit,
              remaining: quota.remaining,
              resetAt: new Date(quota.resetAt).toISOString(),
            },
          };
        },
      };
    },
  };
}
