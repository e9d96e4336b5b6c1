/**
 * The federation example's router: @apollo/gateway composes the subgraphs at start from their
 * `_service { sdl }` (IntrospectAndCompose) and serves the supergraph with Apollo Server. A client's
 * `Authorization` header is passed on to every subgraph, so the pet store gateway forwards that
 * client's own API key upstream (and uses its configured key when there is none).
 */

import { ApolloGateway, IntrospectAndCompose, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import type { Logger } from '../../src/gateway/logger.js';
import type { SubgraphHandle } from './adoptions.js';

export interface RouterOptions {
  readonly port: number;
  readonly host?: string;
  readonly subgraphs: readonly { readonly name: string; readonly url: string }[];
  readonly logger?: Logger;
}

interface RouterContext {
  readonly authorization: string | undefined;
}

export async function startRouter(options: RouterOptions): Promise<SubgraphHandle> {
  const gateway = new ApolloGateway({
    supergraphSdl: new IntrospectAndCompose({ subgraphs: options.subgraphs.map(({ name, url }) => ({ name, url })) }),
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource<RouterContext>({
        url,
        willSendRequest({ request, context }) {
          if (context.authorization) request.http?.headers.set('authorization', context.authorization);
        },
      }),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const server = new ApolloServer<RouterContext>({ gateway, ...(options.logger ? { logger: options.logger } : {}) });
  const { url } = await startStandaloneServer(server, {
    listen: { port: options.port, ...(options.host ? { host: options.host } : {}) },
    context: async ({ req }) => ({ authorization: req.headers.authorization }),
  });
  return { url, close: () => server.stop() };
}
