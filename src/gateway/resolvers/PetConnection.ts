import type { PetConnectionResolvers } from '../__generated__/resolvers-types.js';

export const PetConnection: PetConnectionResolvers = {
  nodes: (connection) => connection.edges.map((edge) => edge.node),
  pageInfo: (connection) => ({
    hasNextPage: connection.hasNextPage,
    endCursor: connection.edges.at(-1)?.cursor ?? null,
  }),
};
