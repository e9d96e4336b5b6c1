/**
 * createEdge(config) → the HTTP server, listening before the rest of the gateway starts: a port in
 * use fails at once, and /health and /ready answer (503 until `serve`) while Redis and Apollo start.
 * `serve` hands it the GraphQL server; `close` drains it without losing an answer (drain.ts).
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../../config.js';
import type { ContextFactory, GraphQL } from '../graphql/graphql.js';
import { acceptQueueReader } from '../observability/accept-queue.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import { createCors } from './cors.js';
import { createDrain, type DrainReport } from './drain.js';
import { answerWhileStarting, createHttpHandler } from './http.js';
import type { SharedExecutions } from './shared-executions.js';
import { createTrustedDocuments, type DocumentKind } from './trusted-documents/door.js';
import { loadManifest } from './trusted-documents/manifest.js';

export type EdgeConfig = Pick<
  Config,
  | 'port'
  | 'host'
  | 'http'
  | 'limits'
  | 'corsOrigins'
  | 'clientIdHeader'
  | 'metricsToken'
  | 'drainGraceMs'
  | 'persistedDocuments'
>;

export interface EdgeDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export interface ServeOptions {
  readonly graphql: Pick<GraphQL, 'apollo' | 'landingPage'>;
  readonly context: ContextFactory;
  readonly executions: SharedExecutions | undefined;
  readonly tracing: Tracing | undefined;
  /** Said at /ready: which Redis is shared and whether it serves (never part of the verdict: a replica serves on its local share). */
  readonly redis?: (() => { readonly mode: string; readonly reachable: boolean }) | undefined;
}

export interface Edge {
  /** The port listened on (config.port, or the one picked for 0). */
  readonly port: number;
  /** How many documents the persisted-documents manifest lists; undefined: none is served. */
  readonly persistedDocuments: number | undefined;
  /** Starts answering GraphQL; until then every request but /health is a 503 with Retry-After. */
  serve(options: ServeOptions): void;
  /** Drains: every request whose bytes have arrived is answered, within `drainGraceMs`. */
  close(): Promise<DrainReport>;
}

/**
 * Listens on `host` (default: config.host); resolves once listening. The persisted-documents
 * manifest is read first: a bad one stops start-up (ConfigError) before the port is taken.
 */
export async function createEdge(config: EdgeConfig, deps: EdgeDeps, host = config.host): Promise<Edge> {
  const { logger, metrics } = deps;
  // Without a manifest every documentId is unknown (PERSISTED_QUERY_NOT_IN_LIST) and the rest is as before.
  const manifest = config.persistedDocuments ? loadManifest(config.persistedDocuments.path) : undefined;
  const kinds: Record<DocumentKind, { inc(): void }> = {
    freeform: metrics.documentRequests.labels('freeform'),
    persisted: metrics.documentRequests.labels('persisted'),
    refused: metrics.documentRequests.labels('refused'),
  };
  const trustedDocuments = createTrustedDocuments({
    manifest,
    only: config.persistedDocuments?.only ?? false,
    count: (kind) => kinds[kind].inc(),
  });
  const httpServer = createServer({
    headersTimeout: config.http.headersTimeoutMs,
    requestTimeout: config.http.requestTimeoutMs,
    // How often Node checks the two timeouts above (default 30 s, which would let a slow client stay that long).
    connectionsCheckingInterval: 1_000,
  });
  // Not every Node version takes these as options of createServer (keepAliveTimeout: Node 20 does not).
  httpServer.headersTimeout = config.http.headersTimeoutMs;
  httpServer.requestTimeout = config.http.requestTimeoutMs;
  httpServer.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  httpServer.maxConnections = config.http.maxConnections;
  // Set once listening, when the port is known; none where there is no /proc/net/tcp.
  let acceptQueue: (() => number) | undefined;
  const drain = createDrain(httpServer, { acceptQueue: () => acceptQueue?.() });
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  httpServer.on('request', (req, res) => (handle ?? answerWhileStarting)(req, res));
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const { port } = httpServer.address() as AddressInfo;
  metrics.watchAcceptQueue(port);
  const reader = acceptQueueReader();
  if (reader !== undefined) acceptQueue = () => reader(port);
  let connectionsDropped = 0;
  httpServer.on('drop', () => {
    metrics.connectionsDropped.inc();
    // Once per thousand, so a flood does not flood the log too.
    if (connectionsDropped++ % 1_000 === 0) {
      logger.warn({ maxConnections: config.http.maxConnections }, 'MAX_CONNECTIONS reached: new connections closed');
    }
  });

  return {
    port,
    persistedDocuments: manifest?.byHash.size,
    serve({ graphql, context, executions, tracing, redis }) {
      handle = createHttpHandler({
        apollo: graphql.apollo,
        context,
        maxBodyBytes: config.limits.maxBodyBytes,
        logger,
        metrics: {
          contentType: metrics.registry.contentType,
          metrics: () => metrics.registry.metrics(),
          token: config.metricsToken,
        },
        cors: createCors({
          origins: config.corsOrigins,
          ...(config.clientIdHeader ? { extraHeaders: [config.clientIdHeader] } : {}),
        }),
        lifecycle: {
          ready: () => !drain.draining,
          track: (res) => drain.track(res),
          ...(redis ? { details: () => ({ redis: redis() }) } : {}),
        },
        serveAsset: graphql.landingPage.serveAsset,
        pageHeaders: graphql.landingPage.pageHeaders,
        executions,
        tracing,
        trustedDocuments,
      });
    },
    close() {
      return drain.drain(config.drainGraceMs);
    },
  };
}
