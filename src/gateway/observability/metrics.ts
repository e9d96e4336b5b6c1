/**
 * Prometheus metrics (`/metrics`), one registry per gateway so several can run in one process.
 * No label holds an API key, its digest, or any string a client chose (an operation name would let
 * clients grow the series without bound, and show every tenant the names other tenants' clients
 * send). What concerns keys is given as aggregates, and the budget gauges (how many keys, how many
 * paused, the lowest remaining budget of any) only where /metrics needs METRICS_TOKEN: they are facts
 * about the tenants, not the process.
 */

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { acceptQueueReader } from './accept-queue.js';

export type Metrics = ReturnType<typeof createMetrics>;

/** What the rate limiter tells the metrics at scrape time: aggregates over keys, never one key. */
export interface BudgetAggregates {
  /** Keys whose budget this process holds (with Redis: whose quota it remembers). */
  readonly keys: number;
  /** Keys paused after a 429 by this process. */
  readonly paused: number;
  /** The smallest Remaining among keys whose window has not reset yet; undefined when none. */
  readonly lowestRemaining: number | undefined;
  /** Requests waiting now for their turn to plan, budget or a connection slot. */
  readonly waiting: number;
  /** Upstream requests that waited as jobs of their key's bottleneck limiter, since start. */
  readonly jobs: number;
}

export interface MetricsOptions {
  /** Register the per-key budget gauges (petstore_budget_*): only when /metrics is behind METRICS_TOKEN. */
  readonly budgetGauges: boolean;
}

export function createMetrics(options: MetricsOptions = { budgetGauges: false }) {
  const registry = new Registry();
  // The process's own health (CPU, RSS, heap and its spaces, event-loop lag, GC pauses, handles),
  // under prom-client's standard names (process_*, nodejs_*), so stock dashboards and alerts apply.
  collectDefaultMetrics({ register: registry });
  // The limiter is made after the metrics (it reports to them); its aggregates are read at scrape time.
  let limiter: { stats(): BudgetAggregates } | undefined;
  const fromLimiter = (name: string, help: string, value: (stats: BudgetAggregates) => number, registered = true) =>
    new Gauge({
      name,
      help,
      registers: registered ? [registry] : [],
      collect() {
        if (limiter !== undefined) this.set(value(limiter.stats()));
      },
    });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  return {
    registry,
    operations: counter(
      'graphql_operations_total',
      'GraphQL operations executed, by type (query, mutation, subscription; none when the document was refused) and outcome (ok or the first error code)',
      ['type', 'outcome'],
    ),
    documentRequests: counter(
      'graphql_document_requests_total',
      'GraphQL requests (each operation of a batch) by how their document came: freeform (its text), persisted (a listed document, by documentId or APQ hash), refused (an unknown id, or not in the safelist, answered before Apollo Server)',
      ['kind'],
    ),
    sharedOperations: counter(
      'graphql_shared_operations_total',
      'GraphQL queries answered by an identical one of the same key already executing (not in graphql_operations_total)',
    ),
    upstreamRequests: counter('petstore_upstream_requests_total', 'Upstream requests by route and HTTP status', [
      'route',
      'status',
    ]),
    upstreamDuration: new Histogram<'route'>({
      name: 'petstore_upstream_request_duration_seconds',
      help: 'Upstream request latency by route',
      labelNames: ['route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    upstream429: counter('petstore_upstream_429_total', '429 answers received from the upstream'),
    bansAvoided: counter(
      'petstore_bans_avoided_total',
      'Requests held back while a key was paused after a 429, instead of being sent into a possible ban',
    ),
    throttled: counter('petstore_limiter_throttled_total', 'Requests that waited for rate-limit budget'),
    clamped: counter(
      'petstore_upstream_clamped_total',
      'Retry-After or X-RateLimit-Reset values beyond PETSTORE_MAX_RETRY_AFTER, clamped (first per key and header)',
      ['header'],
    ),
    rejected: counter('petstore_limiter_rejected_total', 'Requests refused with RATE_LIMITED, by reason', ['reason']),
    queueDepth: fromLimiter('petstore_limiter_queue_depth', 'Requests waiting for rate-limit budget', (s) => s.waiting),
    // Aggregates over keys, read from the limiter at scrape time: no series per key, so /metrics
    // stays the same size whatever the number of keys, and shows nothing that identifies one. Still
    // facts about tenants (with one key, its own budget): registered only behind METRICS_TOKEN.
    keysTracked: fromLimiter(
      'petstore_budget_keys',
      'API keys whose upstream budget the gateway tracks',
      (s) => s.keys,
      options.budgetGauges,
    ),
    keysPaused: fromLimiter(
      'petstore_budget_keys_paused',
      'API keys paused after a 429 from the upstream',
      (s) => s.paused,
      options.budgetGauges,
    ),
    lowestRemaining: fromLimiter(
      'petstore_budget_lowest_remaining',
      "The fewest requests left in any tracked key's tightest upstream window (-1: none known)",
      (s) => s.lowestRemaining ?? -1,
      options.budgetGauges,
    ),
    limiterJobs: new Counter({
      name: 'petstore_limiter_jobs_total',
      help: 'Upstream requests that waited for their API key as jobs of its bottleneck limiter (those that needed no wait went at once)',
      registers: [registry],
      collect() {
        // Counted by the limiter, read at scrape time: no event per request.
        if (limiter === undefined) return;
        this.reset();
        this.inc(limiter.stats().jobs);
      },
    }),
    watchLimiter(source: { stats(): BudgetAggregates }): void {
      limiter = source;
    },
    /** Reports the accept queue of the port the gateway listens on; not at all where there is no /proc/net/tcp. */
    watchAcceptQueue(port: number): void {
      const reader = acceptQueueReader();
      if (reader === undefined) return;
      new Gauge({
        name: 'petstore_http_accept_queue',
        help: 'Client connections the kernel holds on the listening port, not yet accepted by the gateway (Linux)',
        registers: [registry],
        collect() {
          this.set(reader(port));
        },
      });
    },
    loaderBatchSize: new Histogram({
      name: 'petstore_pet_loader_batch_size',
      help: 'Ids per pet lookup batch',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
      registers: [registry],
    }),
    deprecatedCalls: counter(
      'petstore_deprecated_calls_total',
      'Upstream answers marked deprecated (Deprecation/Sunset)',
      ['endpoint'],
    ),
    coalesced: counter(
      'petstore_coalesced_requests_total',
      'Upstream GETs served by an identical one already in flight',
    ),
    cacheHits: counter('petstore_cache_hits_total', 'Upstream GETs served from the per-key response cache'),
    staleServed: counter(
      'petstore_stale_answers_total',
      'Upstream GETs answered from an earlier answer (PETSTORE_STALE_TTL) because the upstream could not be asked',
    ),
    connectionsDropped: counter(
      'petstore_http_connections_dropped_total',
      'Client connections closed at once because MAX_CONNECTIONS were open',
    ),
    refusedFromMemory: counter(
      'petstore_rejected_key_repeats_total',
      'Requests with a key the upstream refused (401) moments ago, answered without asking it again',
    ),
    redisUp: new Gauge<'mode'>({
      name: 'petstore_redis_up',
      help: 'Whether the shared Redis (mode: single, cluster or sentinel) serves the budget: 1 shared, 0 planning on the local share',
      labelNames: ['mode'],
      registers: [registry],
    }),
    redisFailovers: counter(
      'petstore_redis_failovers_total',
      'Times the Redis primary serving this replica changed (a Sentinel or Cluster failover)',
    ),
  };
}
