import type { PetConnectionResolvers } from '../__generated__/resolvers-types.js';
import type { PetModel } from '../models.js';

export const PetConnection: PetConnectionResolvers = {
  // graphql-js only reads a list; the generated type asks for a mutable one.
  nodes: (connection) => connection.nodes as PetModel[],
  edges: (connection) => connection.nodes.map((node, index) => ({ node, position: connection.position(index) })),
  // PageInfo.ts reads the connection; hasNextPage and hasPreviousPage are its own properties.
  pageInfo: (connection) => connection,
};
