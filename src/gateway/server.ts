/**
 * createGateway(config) → { url, close }: wires the parts, each built from its slice of the
 * configuration (docs/architecture.md draws the flow):
 *
 *   edge (HTTP) → graphql (Apollo Server, resolvers, loaders) → upstream (the REST client)
 *
 * with observability (logger, metrics, tracing) and shared primitives below all three.
 */

import type { Tracer } from '@opentelemetry/api';
import type { Config } from '../config.js';
import { createEdge } from './edge/edge.js';
import { createSharedExecutions } from './edge/shared-executions.js';
import { requestKeyId } from './graphql/context.js';
import { createGraphQL } from './graphql/graphql.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { createUpstream } from './upstream/upstream.js';

export { typeDefs } from './graphql/graphql.js';

export interface GatewayOptions {
  /** Where to listen; the port comes from config.port (0 = any free one). Default: config.host. */
  readonly host?: string;
  readonly logger?: Logger;
  /** Milliseconds since the epoch; injectable so tests can move past the sunset date. */
  readonly now?: () => number;
  /** Prefix of the gateway's Redis keys (default petstore-gateway), so tests can share a Redis. */
  readonly redisPrefix?: string;
  /**
   * OpenTelemetry: a span per GraphQL request and per upstream request, W3C traceparent honoured
   * from clients and sent upstream. None (the default): no tracing work at all.
   */
  readonly tracer?: Tracer | undefined;
}

export interface GatewayHandle {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql. */
  readonly url: string;
  readonly port: number;
  /** How many documents the persisted-documents manifest lists; undefined: none is served. */
  readonly persistedDocuments: number | undefined;
  /** Drains (and logs what it did), then closes Apollo Server and the upstream: its pool, Redis. */
  close(): Promise<void>;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<GatewayHandle> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const metrics = createMetrics({ budgetGauges: config.metricsToken !== undefined });
  // Listening comes first, so a port in use fails at once and /ready says 503 while the rest starts.
  const listening = options.host ?? config.host;
  const edge = await createEdge(config, { logger, metrics }, listening);
  const executions = config.coalesce
    ? createSharedExecutions({
        keyIdOf: (headers) => requestKeyId(headers, config.apiKey),
        onShared: () => metrics.sharedOperations.inc(),
      })
    : undefined;
  let upstream: Awaited<ReturnType<typeof createUpstream>>;
  try {
    upstream = await createUpstream(config, {
      logger,
      metrics,
      now,
      redisPrefix: options.redisPrefix,
      tracer: options.tracer,
      ...(executions ? { onInvalidate: (keyId: string) => executions.invalidate(keyId) } : {}),
    });
  } catch (error) {
    await edge.close();
    throw error;
  }
  const graphql = await createGraphQL(config, {
    client: upstream.client,
    describeBudget: (keyId) => upstream.limiter.describe(keyId),
    agreedSecret: upstream.agreedSecret,
    writeGeneration: (keyId) => upstream.writeGeneration(keyId),
    logger,
    metrics,
    now,
    tracing: options.tracer !== undefined,
  });
  // Loaded only when a tracer is given: a gateway that does not trace never loads the propagator (@opentelemetry/core).
  const tracing = options.tracer
    ? (await import('./observability/tracing.js')).createTracing(options.tracer)
    : undefined;
  const redis = config.redis === undefined ? undefined : () => upstream.redisStatus();
  edge.serve({ graphql, context: graphql.context, executions, tracing, redis });
  const host = listening === '0.0.0.0' || listening === '::' ? 'localhost' : listening;

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${edge.port}/graphql`,
    port: edge.port,
    persistedDocuments: edge.persistedDocuments,
    async close() {
      // Every request whose bytes have arrived is answered before anything below it closes.
      const drained = await edge.close();
      // Shutdown said "shutting down" and then nothing for up to SHUTDOWN_GRACE: this says it got through.
      if (drained.cut > 0) logger.warn(drained, 'drained: requests still unanswered at SHUTDOWN_GRACE were cut');
      else logger.info(drained, 'drained: every request that had arrived was answered');
      await graphql.close();
      await upstream.close();
    },
  };
}
