import type { PetConnectionResolvers } from '../__generated__/resolvers-types.js';
import type { PetModel } from '../models.js';

export const PetConnection: PetConnectionResolvers = {
  // graphql-js only reads a list; the generated type asks for a mutable one.
  nodes: (connection) => connection.nodes as PetModel[],
  edges: (connection) => connection.nodes.map((node, index) => ({ node, position: connection.position(index) })),
  pageInfo: (connection, _args, context) => {
    const last = connection.nodes.length - 1;
    return {
      hasNextPage: connection.hasNextPage,
      endCursor: last < 0 ? null : context.cursors.encode(connection.position(last)),
    };
  },
};
