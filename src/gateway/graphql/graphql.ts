/**
 * createGraphQL(config, upstream) → Apollo Server 5 on a federation v2 subgraph schema, with its
 * plugins, and the context each request gets. The HTTP edge serves it.
 */

import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDisableSuggestions } from '@apollo/server/plugin/disableSuggestions';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { type Config, PLAN_LIMITS } from '../../config.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { OperationTrace } from '../observability/tracing.js';
import type { CancelSignal } from '../shared/cancel.js';
import type { RestClient } from '../upstream/client.js';
import type { BudgetView } from '../upstream/limits/limiter.js';
import type { Generation } from '../upstream/response.js';
import { createContext, type GatewayContext } from './context.js';
import { shareEmptyArguments } from './field-arguments.js';
import { formatError } from './format-error.js';
import { createCursorCodec } from './ids.js';
import type { LookupStats } from './loaders/cost.js';
import { maxUpstreamRequests } from './loaders/cost.js';
import { createPetMemory } from './loaders/pet-memory.js';
import { armorProtection } from './plugins/armor.js';
import { budgetExtensions } from './plugins/budget-extensions.js';
import { upstreamEstimate } from './plugins/estimate.js';
import { createLandingPage, type LandingPageSetup } from './plugins/landing-page/landing-page.js';
import { operationMetrics } from './plugins/operation-metrics.js';
import { requestHooksPlugin } from './plugins/request-hooks.js';
import { requestShape } from './plugins/request-shape.js';
import { tracingPlugin } from './plugins/tracing.js';
import { resolvers } from './resolvers/index.js';

/** The GraphQL contract (schema/petstore.graphql), read once at start. */
export const typeDefs = parse(readFileSync(new URL('../../../schema/petstore.graphql', import.meta.url), 'utf8'));

export type GraphQLConfig = Pick<
  Config,
  | 'apiKey'
  | 'plan'
  | 'rateLimits'
  | 'maxWaitMs'
  | 'timeoutMs'
  | 'cacheTtlMs'
  | 'staleTtlMs'
  | 'cacheSizeBytes'
  | 'petLookup'
  | 'maxKeys'
  | 'cursorSecret'
  | 'clientIdHeader'
  | 'introspection'
  | 'production'
  | 'development'
  | 'landingPage'
  | 'limits'
  | 'persistedDocuments'
>;

export interface GraphQLDeps {
  readonly client: RestClient;
  /** The key's budget by key digest as the limiter knows it, or undefined before any answer. */
  readonly describeBudget: (keyId: string) => BudgetView | undefined;
  /** The secret cursors are sealed with when none is configured (agreed on through Redis). */
  readonly agreedSecret: string | undefined;
  /** A key's write generation now (by digest), shared by the replicas on one Redis: what lookups learned holds under it only. */
  readonly writeGeneration: (keyId: string) => Promise<Generation>;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly tracing: boolean;
}

/** Builds a request's context: its `query` text, request id, client-gone signal and span. */
export type ContextFactory = (
  req: IncomingMessage,
  query: string | undefined,
  requestId: string,
  signal: CancelSignal,
  trace: OperationTrace | undefined,
) => Promise<GatewayContext>;

export interface GraphQL {
  readonly apollo: ApolloServer<GatewayContext>;
  readonly context: ContextFactory;
  readonly landingPage: LandingPageSetup;
  close(): Promise<void>;
}

export async function createGraphQL(config: GraphQLConfig, deps: GraphQLDeps): Promise<GraphQL> {
  const { logger, metrics, now } = deps;
  shareEmptyArguments();
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
    // PERSISTED_DOCUMENTS_ONLY: APQ registration off. The edge resolves listed hashes and refuses the
    // rest, so no APQ request reaches Apollo Server; this makes sure none could register a document.
    // Otherwise Apollo's APQ as before, on its default cache (an LRU bounded at 30 MiB).
    ...(config.persistedDocuments?.only ? { persistedQueries: false as const } : {}),
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
      ...(deps.tracing ? [tracingPlugin()] : []),
    ],
  });
  await apollo.start();

  const keepsAnswers = config.cacheTtlMs > 0 || config.staleTtlMs > 0;
  const contextDeps = {
    config,
    client: deps.client,
    cursors: createCursorCodec(config.cursorSecret ?? deps.agreedSecret),
    logger,
    lookupStats,
    now,
    maxUpstreamRequests: maxUpstreamRequests(config.limits, config.rateLimits),
    describeBudget: (keyId: string) => deps.describeBudget(keyId) ?? planBudget(config),
    clientIdHeader: config.clientIdHeader,
    onBatch: (size: number) => metrics.loaderBatchSize.observe(size),
    ...(keepsAnswers
      ? {
          petMemory: {
            pets: createPetMemory({ maxKeys: Math.min(config.maxKeys, 1_000), maxBytes: config.cacheSizeBytes / 4 }),
            freshMs: config.cacheTtlMs,
            staleMs: Math.max(config.cacheTtlMs, config.staleTtlMs),
            generation: deps.writeGeneration,
          },
        }
      : {}),
  };
  return {
    apollo,
    landingPage,
    context: async (req, query, requestId, signal, trace) =>
      createContext(contextDeps, {
        headers: req.headers,
        query,
        requestId,
        signal,
        remoteAddress: req.socket.remoteAddress,
        trace,
      }),
    close: () => apollo.stop(),
  };
}

/**
 * What is known of a key's budget before it has sent anything, with client-side throttling off:
 * the plan's table, untouched (enterprise, which has none, reports nothing: zeros).
 */
function planBudget(config: Pick<Config, 'rateLimits' | 'plan'>): BudgetView {
  const window = config.rateLimits[0] ?? (config.plan === 'enterprise' ? undefined : PLAN_LIMITS[config.plan][0]);
  return { limit: window?.count ?? 0, remaining: window?.count ?? 0, used: 0, resetAt: undefined };
}
