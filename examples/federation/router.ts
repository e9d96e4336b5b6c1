/**
 * The federation example's second router (ROUTER=apollo): @apollo/gateway, which Apollo keeps in
 * maintenance, serving the supergraph with Apollo Server. It takes a composed supergraph (what
 * `npm run supergraph:compose` writes), or composes at start from the subgraphs' `_service { sdl }`
 * (IntrospectAndCompose). A client's `Authorization` header is passed on to the pet store subgraph,
 * so the pet store gateway forwards that client's own API key upstream (and uses its configured key
 * when there is none); W3C Trace Context headers go to every subgraph.
 */

import { ApolloGateway, IntrospectAndCompose, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import type { Logger } from '../../src/gateway/observability/logger.js';
import type { SubgraphHandle } from './adoptions.js';

export interface RouterOptions {
  readonly port: number;
  readonly host?: string;
  /** A composed supergraph; or else `subgraphs`, composed at start. */
  readonly supergraphSdl?: string;
  readonly subgraphs?: readonly { readonly name: string; readonly url: string }[];
  readonly logger?: Logger;
}

/** The client headers each subgraph is sent; nothing else of the client's request reaches them. */
const FORWARDED = ['traceparent', 'tracestate'] as const;
const FORWARDED_TO_PETSTORE = ['authorization', ...FORWARDED] as const;

type RouterContext = Readonly<Partial<Record<(typeof FORWARDED_TO_PETSTORE)[number], string>>>;

export async function startRouter(options: RouterOptions): Promise<SubgraphHandle> {
  const gateway = new ApolloGateway({
    supergraphSdl:
      options.supergraphSdl ??
      new IntrospectAndCompose({ subgraphs: (options.subgraphs ?? []).map(({ name, url }) => ({ name, url })) }),
    buildService: ({ name, url }) =>
      new RemoteGraphQLDataSource<RouterContext>({
        url,
        willSendRequest({ request, context }) {
          for (const header of name === 'petstore' ? FORWARDED_TO_PETSTORE : FORWARDED) {
            const value = context[header];
            if (value) request.http?.headers.set(header, value);
          }
        },
      }),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const server = new ApolloServer<RouterContext>({
    gateway,
    // Subgraph errors reach the client with their extensions, but never with the router's stack.
    includeStacktraceInErrorResponses: false,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const { url } = await startStandaloneServer(server, {
    listen: { port: options.port, ...(options.host ? { host: options.host } : {}) },
    context: async ({ req }) =>
      Object.fromEntries(
        FORWARDED_TO_PETSTORE.flatMap((header) => {
          const value = req.headers[header];
          return typeof value === 'string' ? [[header, value]] : [];
        }),
      ),
  });
  return { url, close: () => server.stop() };
}
