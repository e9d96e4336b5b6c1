/** createGateway(config) → { url, close }: Apollo Server 5 with a federation v2 subgraph schema, on Node's http. */

import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDisableSuggestions } from '@apollo/server/plugin/disableSuggestions';
import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Tracer } from '@opentelemetry/api';
import { parse } from 'graphql';
import { type Config, ConfigError, PLAN_LIMITS } from '../config.js';
import { createCors } from './edge/cors.js';
import { createDrain } from './edge/drain.js';
import { answerWhileStarting, createHttpHandler } from './edge/http.js';
import { createSharedExecutions } from './edge/shared-executions.js';
import { createContext, type GatewayContext, requestKeyId } from './graphql/context.js';
import { shareEmptyArguments } from './graphql/field-arguments.js';
import { formatError } from './graphql/format-error.js';
import { createCursorCodec } from './graphql/ids.js';
import type { LookupStats } from './graphql/loaders/lookup-plan.js';
import { createPetMemory } from './graphql/loaders/pet-memory.js';
import { budgetExtensions } from './graphql/plugins/budget-extensions.js';
import { armorProtection, maxUpstreamRequests, upstreamEstimate } from './graphql/plugins/estimate.js';
import { createLandingPage } from './graphql/plugins/landing-page.js';
import { operationMetrics } from './graphql/plugins/operation-metrics.js';
import { requestHooksPlugin } from './graphql/plugins/request-hooks.js';
import { requestShape } from './graphql/plugins/request-shape.js';
import { tracingPlugin } from './graphql/plugins/tracing.js';
import { resolvers } from './graphql/resolvers/index.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics, recordLimiterEvent, upstreamObserver } from './observability/metrics.js';
import type { OperationTrace } from './observability/tracing.js';
import type { CancelSignal } from './shared/cancel.js';
import { createRestClient } from './upstream/client.js';
import { type BudgetStore, MemoryBudgetStore } from './upstream/limits/budget.js';
import { type BudgetView, createLimiter } from './upstream/limits/limiter.js';
import { createSlots } from './upstream/limits/slots.js';
import { memoryAnswers } from './upstream/sharing/answers.js';
import { createResponseSharing } from './upstream/sharing/sharing.js';
import { rejectedKeys } from './upstream/stages/rejected-keys.js';

/** How long shutdown waits for requests in flight before it closes their connections. */
const DRAIN_GRACE_MS = 10_000;

/**
 * Connections to the upstream, and the share of them one API key may hold: many keys with slow
 * answers can hold at most the pool; one key at most a quarter of it. Past the pool, keys take turns.
 */
const UPSTREAM_CONNECTIONS = 64;
const CONNECTION_SHARE_PER_KEY = 0.25;

/** The GraphQL contract (schema/petstore.graphql), read once at start. */
export const typeDefs = parse(readFileSync(new URL('../../schema/petstore.graphql', import.meta.url), 'utf8'));

export interface GatewayOptions {
  /** Where to listen; the port comes from config.port (0 = any free one). Default: every interface. */
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
  close(): Promise<void>;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<GatewayHandle> {
  if (config.petstoreBaseUrl === undefined) throw new Error('createGateway needs config.petstoreBaseUrl');
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  shareEmptyArguments();
  // Listening comes first, so a port in use fails at once and /ready says 503 while the rest starts.
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
  const drain = createDrain(httpServer);
  let started = false;
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  httpServer.on('request', (req, res) => (handle ?? answerWhileStarting)(req, res));
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, options.host ?? config.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });

  // ioredis (with its dependencies, ~2 MB of heap) is loaded only with REDIS_URL.
  let store: BudgetStore;
  // Replicas must accept each other's cursors: the secret is configured, or agreed on through Redis.
  let agreedSecret: string | undefined;
  if (config.redisUrl) {
    const { RedisBudgetStore } = await import('./upstream/limits/budget-redis.js');
    const shared = new RedisBudgetStore({
      url: config.redisUrl,
      logger,
      inflightMs: config.maxWaitMs + 2 * config.timeoutMs + 5_000,
      ...(options.redisPrefix ? { prefix: options.redisPrefix } : {}),
    });
    // ready() resolves after 3 s without an answer too; the secret is agreed on only if Redis answers.
    await shared.ready();
    agreedSecret = await shared.sharedSecret('cursor-secret');
    // Alone, without Redis and without having seen the other replicas, this one would plan the whole
    // plan for itself: N replicas starting so would spend N times the key's budget.
    if (agreedSecret === undefined || shared.degraded) {
      await shared.close();
      httpServer.close();
      throw new ConfigError(`REDIS_URL did not answer within 3 s at start; start Redis, or unset REDIS_URL`);
    }
    store = shared;
  } else {
    store = new MemoryBudgetStore({ idleMs: config.keyIdleMs, maxKeys: config.maxKeys });
  }
  const cursorSecret = config.cursorSecret ?? agreedSecret;
  const metrics = createMetrics();
  const limiter = createLimiter({
    windows: config.rateLimits,
    store,
    slots: createSlots({
      total: UPSTREAM_CONNECTIONS,
      perKey: Math.max(1, Math.floor(UPSTREAM_CONNECTIONS * CONNECTION_SHARE_PER_KEY)),
      maxQueuedPerClient: 1_000,
    }),
    maxRetryAfterMs: config.maxRetryAfterMs,
    maxKeys: config.maxKeys,
    now,
    onEvent: (event) => {
      if (event.type === 'clamped') {
        logger.warn(
          { header: event.header, maxSeconds: config.maxRetryAfterMs / 1000 },
          'the Pet Store sent a rate-limit time beyond PETSTORE_MAX_RETRY_AFTER; clamped',
        );
      }
      recordLimiterEvent(metrics, event);
    },
  });
  metrics.watchLimiter(limiter);
  metrics.watchAcceptQueue((httpServer.address() as AddressInfo).port);
  // Loaded only when a tracer is given: a gateway that does not trace never loads the propagator (@opentelemetry/core).
  const tracing = options.tracer
    ? (await import('./observability/tracing.js')).createTracing(options.tracer)
    : undefined;
  const keepsAnswers = config.cacheTtlMs > 0 || config.staleTtlMs > 0;
  const executions = config.coalesce
    ? createSharedExecutions({
        keyIdOf: (headers) => requestKeyId(headers, config.apiKey),
        onShared: () => metrics.sharedOperations.inc(),
      })
    : undefined;
  const sharing =
    config.coalesce || keepsAnswers
      ? createResponseSharing({
          coalesce: config.coalesce,
          ttlMs: config.cacheTtlMs,
          staleTtlMs: config.staleTtlMs,
          // With Redis, answers (cached and stale) serve every replica; without it, this one.
          answers:
            keepsAnswers && config.redisUrl
              ? (await import('./upstream/sharing/answers-redis.js')).redisAnswers({
                  url: config.redisUrl,
                  ...(options.redisPrefix ? { prefix: options.redisPrefix } : {}),
                  fallback: memoryAnswers(10_000),
                  onDegraded: () => logger.warn('Redis unreachable: answers cached in this process until it returns'),
                })
              : memoryAnswers(10_000),
          onCoalesced: () => metrics.coalesced.inc(),
          onCacheHit: () => metrics.cacheHits.inc(),
          onStale: () => metrics.staleServed.inc(),
          ...(executions ? { onInvalidate: (keyId: string) => executions.invalidate(keyId) } : {}),
        })
      : undefined;
  const client = createRestClient({
    baseUrl: config.petstoreBaseUrl,
    timeoutMs: config.timeoutMs,
    maxWaitMs: config.maxWaitMs,
    connections: UPSTREAM_CONNECTIONS,
    logger,
    limiter: limiter.stage,
    rejectedKeys: rejectedKeys({ maxKeys: config.maxKeys, onRemembered: () => metrics.refusedFromMemory.inc() }),
    observer: upstreamObserver(metrics),
    now,
    ...(sharing ? { sharing } : {}),
    ...(tracing ? { tracing: tracing.upstream } : {}),
  });
  const lookupStats: LookupStats = { fullScanPages: undefined };

  const armor = armorProtection(config.limits);
  const landingPage = createLandingPage(config.landingPage);
  const apollo = new ApolloServer<GatewayContext>({
    schema: buildSubgraphSchema([{ typeDefs, resolvers }]),
    introspection: config.introspection,
    csrfPrevention: true,
    // main.ts owns SIGTERM/SIGINT. Apollo's own handler would stop the server, then send the signal
    // again, which main.ts takes for a second signal and exits 1 in the middle of its drain.
    stopOnTerminationSignals: false,
    allowBatchedHttpRequests: config.limits.allowBatchedRequests,
    validationRules: armor.validationRules,
    parseOptions: { maxTokens: config.limits.maxTokens },
    includeStacktraceInErrorResponses: config.development,
    formatError: (formatted, error) => formatError(formatted, error, { ...config, logger }),
    logger,
    plugins: [
      ApolloServerPluginInlineTraceDisabled(),
      // No cache hints are used; the default plugin would wrap every field resolver to collect them.
      ApolloServerPluginCacheControlDisabled(),
      landingPage.plugin,
      ...(config.production ? [ApolloServerPluginDisableSuggestions()] : []),
      // graphql-armor is CommonJS and so names the CommonJS build's types; the plugins are the same objects.
      ...(armor.plugins as unknown as ApolloServerPlugin<GatewayContext>[]),
      // In the order the four plugins had: an operation both over budget and of a refused shape is
      // answered UPSTREAM_BUDGET_EXCEEDED, as before.
      requestHooksPlugin([
        upstreamEstimate({
          limits: config.limits,
          windows: config.rateLimits,
          petLookup: config.petLookup,
          lookupStats,
          now,
        }),
        budgetExtensions(),
        operationMetrics(metrics, logger),
        requestShape(),
      ]),
      ...(options.tracer ? [tracingPlugin()] : []),
    ],
  });
  await apollo.start();

  const deps = {
    config,
    client,
    cursors: createCursorCodec(cursorSecret),
    logger,
    lookupStats,
    now,
    maxUpstreamRequests: maxUpstreamRequests(config.limits, config.rateLimits),
    describeBudget: (keyId: string) => limiter.describe(keyId) ?? planBudget(config),
    clientIdHeader: config.clientIdHeader,
    onBatch: (size: number) => metrics.loaderBatchSize.observe(size),
    ...(keepsAnswers
      ? {
          petMemory: {
            pets: createPetMemory({ maxKeys: Math.min(config.maxKeys, 1_000) }),
            freshMs: config.cacheTtlMs,
            staleMs: Math.max(config.cacheTtlMs, config.staleTtlMs),
          },
        }
      : {}),
  };
  let connectionsDropped = 0;
  httpServer.on('drop', () => {
    metrics.connectionsDropped.inc();
    // Once per thousand, so a flood does not flood the log too.
    if (connectionsDropped++ % 1_000 === 0) {
      logger.warn({ maxConnections: config.http.maxConnections }, 'MAX_CONNECTIONS reached: new connections closed');
    }
  });
  handle = createHttpHandler({
    apollo,
    context: async (
      req: IncomingMessage,
      query: string | undefined,
      requestId: string,
      signal: CancelSignal,
      trace: OperationTrace | undefined,
    ) =>
      createContext(deps, {
        headers: req.headers,
        query,
        requestId,
        signal,
        remoteAddress: req.socket.remoteAddress,
        trace,
      }),
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
    lifecycle: { ready: () => started && !drain.draining, track: (res) => drain.track(res) },
    serveAsset: landingPage.serveAsset,
    executions,
    tracing,
  });
  started = true;
  const { port } = httpServer.address() as AddressInfo;
  const listening = options.host ?? config.host;
  const host = listening === '0.0.0.0' || listening === '::' ? 'localhost' : listening;

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/graphql`,
    port,
    async close() {
      // Every request whose bytes have arrived is answered before anything below it closes.
      await drain.drain(DRAIN_GRACE_MS);
      await apollo.stop();
      await client.close();
      await sharing?.close();
      await limiter.close();
    },
  };
}

/**
 * What is known of a key's budget before it has sent anything, with client-side throttling off:
 * the plan's table, untouched (enterprise, which has none, reports nothing: zeros).
 */
function planBudget(config: Config): BudgetView {
  const window = config.rateLimits[0] ?? (config.plan === 'enterprise' ? undefined : PLAN_LIMITS[config.plan][0]);
  return { limit: window?.count ?? 0, remaining: window?.count ?? 0, used: 0, resetAt: undefined };
}
