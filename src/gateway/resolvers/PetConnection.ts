import type { PetConnectionResolvers } from '../__generated__/resolvers-types.js';
import { encodeCursor } from '../ids.js';

export const PetConnection: PetConnectionResolvers = {
  nodes: (connection) => connection.edges.map((edge) => edge.node),
  pageInfo: (connection) => {
    const last = connection.edges.at(-1);
    return { hasNextPage: connection.hasNextPage, endCursor: last ? encodeCursor(last.position) : null };
  },
};
