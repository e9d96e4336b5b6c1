import type { PetEdgeResolvers } from '../__generated__/resolvers-types.js';

export const PetEdge: PetEdgeResolvers = {
  // Sealed on demand: most clients ask for nodes, not for every edge's cursor.
  cursor: (edge, _args, context) => context.cursors.encode(edge.position),
};
