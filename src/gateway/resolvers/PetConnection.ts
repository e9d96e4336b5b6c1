import type { PetConnectionResolvers } from '../__generated__/resolvers-types.js';

export const PetConnection: PetConnectionResolvers = {
  nodes: (connection) => connection.edges.map((edge) => edge.node),
  pageInfo: (connection, _args, context) => {
    const last = connection.edges.at(-1);
    return { hasNextPage: connection.hasNextPage, endCursor: last ? context.cursors.encode(last.position) : null };
  },
};
