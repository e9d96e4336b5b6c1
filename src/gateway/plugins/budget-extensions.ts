/** Puts the key's budget, as far as the gateway knows it, into every GraphQL response: `extensions.rateLimit`. */

import type { ApolloServerPlugin } from '@apollo/server';
import type { RateWindow } from '../../config.js';
import type { GatewayContext } from '../context.js';
import type { Quota } from '../rest/budget.js';
import { keyIdOf } from '../rest/key-id.js';
import type { Limiter } from '../rest/limiter.js';

/**
 * Before the upstream has answered for a key, the plan is all the gateway knows: its smallest
 * window, untouched. With throttling off and no answer yet, there is nothing to report.
 */
export function rateLimitExtension(
  limiter: Limiter,
  windows: readonly RateWindow[],
  now: () => number,
): ApolloServerPlugin<GatewayContext> {
  const plan = windows[0];
  const fromPlan = (): Quota | undefined =>
    plan && { limit: plan.count, remaining: plan.count, resetAt: now() + plan.windowMs };
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, contextValue }) {
          // No context when the request was refused before one was built (no credential).
          if (response.body.kind !== 'single' || !contextValue?.key) return;
          const known = limiter.quota(keyIdOf(contextValue.key));
          const quota = known === undefined || known.resetAt === 0 ? fromPlan() : known;
          if (quota === undefined) return;
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
