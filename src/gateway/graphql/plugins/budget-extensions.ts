/**
 * Every GraphQL response says what the operation cost and what is left of the key's budget:
 * `extensions.cost` (`estimatedUpstreamRequests` before it ran, `actualUpstreamRequests` it really
 * sent; answers shared or cached cost 0), as Shopify's `extensions.cost` does, and
 * `extensions.rateLimit` (the tightest window as far as the gateway knows it: the configured one
 * from its own sends, or the upstream's last word when it has less left; `resetAt` only when
 * something is known to be spent; none for a key the upstream refused: no budget exists for a key
 * that does not), and, when a field was answered from an earlier answer because the upstream could
 * not be asked, `extensions.stale: [{ path, ageSeconds }]`.
 */

import type { GatewayContext } from '../context.js';
import type { RequestHooks } from './request-hooks.js';

export function budgetExtensions(): RequestHooks<GatewayContext> {
  // Answers in a row name the same reset: written once, as toISOString is most of this hook's time.
  let reset: { readonly at: number; readonly iso: string } | undefined;
  const isoOf = (at: number): string => {
    if (reset?.at !== at) reset = { at, iso: new Date(at).toISOString() };
    return reset.iso;
  };
  return {
    willSendResponse({ response, contextValue }) {
      // No context when the request was refused before one was built (no credential), nor a key
      // for a metadata-only request (introspection, _service).
      if (response.body.kind !== 'single' || !contextValue?.key) return;
      const { operation } = contextValue;
      const { errors } = response.body.singleResult;
      const refused = errors?.some((error) => error.extensions?.code === 'UNAUTHENTICATED') ?? false;
      const budget = contextValue.budget();
      response.body.singleResult.extensions = {
        ...response.body.singleResult.extensions,
        ...(refused
          ? {}
          : {
              rateLimit: {
                limit: budget.limit,
                remaining: budget.remaining,
                used: budget.used,
                ...(budget.resetAt === undefined ? {} : { resetAt: isoOf(budget.resetAt) }),
              },
            }),
        cost: { estimatedUpstreamRequests: operation.estimated, actualUpstreamRequests: operation.sent },
        ...(contextValue.stale.length === 0 ? {} : { stale: contextValue.stale }),
      };
    },
  };
}
