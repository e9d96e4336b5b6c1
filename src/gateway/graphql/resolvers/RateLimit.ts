import type { RateLimitResolvers } from '../__generated__/resolvers-types.js';

export const RateLimit: RateLimitResolvers = {
  resetAt: (budget) => (budget.resetAt === undefined ? null : new Date(budget.resetAt).toISOString()),
};
