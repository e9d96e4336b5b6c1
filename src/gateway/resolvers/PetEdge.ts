import type { PetEdgeResolvers } from '../__generated__/resolvers-types.js';
import { encodeCursor } from '../ids.js';

export const PetEdge: PetEdgeResolvers = {
  // Encoded on demand: most clients ask for nodes, not for every edge's cursor.
  cursor: (edge) => encodeCursor(edge.position),
};
