/** graphql-armor's limits on an operation's shape, checked before it runs (no upstream call for a refused one). */

import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { OperationLimits } from '../../../config.js';

/** graphql-armor's protections, with the configured limits; its messages name the limit exceeded. */
export function armorProtection(limits: OperationLimits) {
  return new ApolloArmor({
    maxDepth: { n: limits.maxDepth },
    maxAliases: { n: limits.maxAliases },
    // graphql-js's own parser limit instead (server.ts parseOptions): armor's throws from a hook,
    // which Apollo answers with HTTP 500; graphql-js's is a syntax error, answered with 400.
    maxTokens: { enabled: false },
    maxDirectives: { n: limits.maxDirectives },
    costLimit: { maxCost: limits.maxCost },
    // Field suggestions are turned off by Apollo's own plugin in production only.
    blockFieldSuggestion: { enabled: false },
  }).protect();
}
