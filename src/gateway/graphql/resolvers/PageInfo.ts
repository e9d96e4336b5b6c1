import type { PageInfoResolvers } from '../__generated__/resolvers-types.js';

// Relay's startCursor and endCursor are the first and last edges' cursors, sealed only when asked for.
export const PageInfo: PageInfoResolvers = {
  startCursor: (connection, _args, context) =>
    connection.nodes.length === 0 ? null : context.cursors.encode(connection.position(0)),
  endCursor: (connection, _args, context) =>
    connection.nodes.length === 0 ? null : context.cursors.encode(connection.position(connection.nodes.length - 1)),
};
