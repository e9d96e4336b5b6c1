/**
 * `npm start`: read the configuration, start the embedded reference Pet Store when no upstream is
 * configured, and serve the gateway. The only place that reads the environment or picks ports.
 */

import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import type { Tracer } from '@opentelemetry/api';
import {
  ConfigError,
  type LandingPage,
  type PersistedDocumentsConfig,
  parseConfig,
  type TracingConfig,
} from './config.js';
import type { Logger } from './gateway/observability/logger.js';
import type { GatewayHandle } from './gateway/server.js';
import { heapGrowingFlag } from './heap.js';
import type { PetstoreHandle } from './petstore/start.js';

// V8 reads the growing factor at every full GC, so setting it now, after start-up, takes effect
// (src/heap.ts says why the capped heap needs it).
const growing = heapGrowingFlag(process.execArgv, getHeapStatistics().heap_size_limit);
if (growing !== undefined) setFlagsFromString(growing);

let config: ReturnType<typeof parseConfig>;
try {
  config = parseConfig(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`gateway: ${error.message}`);
  process.exit(1);
}
// Loaded only once the configuration is known to be good: loading Apollo Server, graphql-js and
// the rest takes seconds on a busy machine, and a bad setting is reported without waiting for it.
const [{ closeLogger, createLogger }, { createGateway }, { demoCatalogue }, { DEMO_KEY, startPetstore }] =
  await Promise.all([
    import('./gateway/observability/logger.js'),
    import('./gateway/server.js'),
    import('./petstore/seed.js'),
    import('./petstore/start.js'),
  ]);
const logger = createLogger(config.logLevel);
/** After the drain (SHUTDOWN_GRACE): time to close the upstream pool, Redis and the embedded store, and send the last spans. */
const CLOSE_AFTER_DRAIN_MS = 5_000;
/** Longest the last spans may take to reach the collector at shutdown, within the time above. */
const TRACES_FLUSH_MS = 3_000;
/**
 * A signal this soon after the first is the same request to stop, not a second one: `npm start`
 * stopped with Ctrl-C, or by a supervisor that signals the process group, delivers the signal
 * twice within milliseconds (once from the terminal or supervisor, once forwarded by npm).
 */
const REPEAT_WINDOW_MS = 1_000;

/** Start-up failures a person can fix, in one line naming the setting; anything else is a bug and keeps its stack. */
function fail(message: string): never {
  console.error(`gateway: ${message}`);
  process.exit(1);
}

let embedded: PetstoreHandle | undefined;
/** The typed client example's manifest, when the embedded demo serves it. */
let demoDocuments: PersistedDocumentsConfig | undefined;
if (config.petstoreBaseUrl === undefined) {
  if (config.production && !config.demo) {
    fail(
      'NODE_ENV=production needs PETSTORE_BASE_URL (the embedded demo store is for trying the gateway); set PETSTORE_DEMO=true to run the demo in production mode anyway',
    );
  }
  // No upstream configured: front an in-process reference store on a free port, so Sandbox works with no setup.
  embedded = await startPetstore({ port: 0, seed: demoCatalogue() });
  // So that `npm run example:client -- --persisted` works against `npm start` as the README shows.
  if (config.persistedDocuments === undefined) demoDocuments = exampleDocuments();
  config = Object.freeze({
    ...config,
    petstoreBaseUrl: embedded.url,
    apiKey: config.apiKey ?? DEMO_KEY,
    persistedDocuments: config.persistedDocuments ?? demoDocuments,
  });
}

const tracing = config.tracing ? await startTracing(config.tracing, logger) : undefined;
let gateway: GatewayHandle;
try {
  gateway = await createGateway(config, { logger, tracer: tracing?.tracer });
} catch (error) {
  if (error instanceof ConfigError) fail(error.message);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    fail(`PORT ${config.port} on HOST ${config.host} is already in use; set PORT to a free port`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') fail(`HOST ${config.host} is not an address of this machine`);
  if (code === 'EACCES') fail(`PORT ${config.port} needs privileges this process does not have; set PORT above 1023`);
  throw error;
}
if (config.drainGraceMs < config.maxWaitMs + config.timeoutMs) {
  logger.warn(
    { drainGraceMs: config.drainGraceMs, longestRequestMs: config.maxWaitMs + config.timeoutMs },
    'SHUTDOWN_GRACE is shorter than a request may take (PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT): a createPet in flight at shutdown may be carried out upstream and its answer lost',
  );
}

/**
 * SIGTERM/SIGINT: stop accepting, answer every request that has arrived (each within its own
 * deadline, PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT, which the default SHUTDOWN_GRACE covers), close
 * the upstream pool, Redis and the embedded store, exit 0. The same signal repeated within a
 * second is the same request to stop; a signal after that, or a shutdown that overruns
 * SHUTDOWN_GRACE plus CLOSE_AFTER_DRAIN_MS, exits at once with code 1.
 */
let stoppingSince: number | undefined;
function onSignal(signal: NodeJS.Signals): void {
  if (stoppingSince === undefined) {
    stoppingSince = Date.now();
    void shutdown(signal);
    return;
  }
  if (Date.now() - stoppingSince < REPEAT_WINDOW_MS) {
    logger.info({ signal }, 'signal repeated within a second: already shutting down');
    return;
  }
  logger.warn({ signal }, 'second signal while shutting down: exiting without waiting for requests in flight');
  logger.flush();
  process.exit(1);
}

async function shutdown(signal: NodeJS.Signals): Promise<void> {
  const began = Date.now();
  logger.info({ signal, graceMs: config.drainGraceMs }, 'shutting down');
  setTimeout(() => {
    logger.error('shutdown overran its deadline; exiting');
    logger.flush();
    process.exit(1);
  }, config.drainGraceMs + CLOSE_AFTER_DRAIN_MS).unref();
  await gateway.close();
  await embedded?.close();
  if (tracing && !(await tracing.shutdown(TRACES_FLUSH_MS))) {
    logger.warn({ ms: TRACES_FLUSH_MS }, 'OpenTelemetry: the last spans were not exported in time; dropped');
  }
  const closed = [
    'the upstream pool',
    ...(config.redis ? ['Redis'] : []),
    ...(embedded ? ['the embedded Pet Store'] : []),
  ];
  logger.info({ ms: Date.now() - began, code: 0 }, `stopped: ${closed.join(', ')} closed; exiting`);
  await closeLogger(logger);
  process.exit(0);
}
// Before the ready line: a supervisor may stop the gateway the moment it says it is ready (and
// the start-up checks below take seconds), and a signal without a handler kills it mid-request.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, onSignal);

const keyInUse = embedded
  ? 'the demo key (clients without Authorization use it)'
  : config.apiKey
    ? 'PETSTORE_API_KEY (clients without Authorization use it)'
    : 'none (every client sends its own Authorization: Bearer key)';
console.log(`Pet Store GraphQL gateway ready at ${gateway.url} (listening on ${config.host}:${gateway.port})`);
console.log(
  embedded
    ? `Upstream: the embedded reference Pet Store at ${embedded.url} (demo catalogue; set PETSTORE_BASE_URL to front a real one)`
    : `Upstream: ${config.petstoreBaseUrl}`,
);
console.log(`Server key: ${keyInUse}`);
const documents = persistedDocumentsLine();
if (documents) console.log(documents);
if (config.tracing) {
  console.log(
    `Tracing: spans exported over OTLP/HTTP as service ${config.tracing.serviceName} (OTEL_EXPORTER_OTLP_* endpoint)`,
  );
}
if (!embedded) {
  const reason = await unreachable(new URL(config.petstoreBaseUrl as string));
  if (reason) {
    console.log(
      `Upstream: PETSTORE_BASE_URL ${config.petstoreBaseUrl} ${reason}; requests answer UPSTREAM_UNAVAILABLE until it does`,
    );
  }
}
if (config.corsOrigins === '*' && config.apiKey !== undefined) {
  logger.warn("CORS_ORIGINS=* with a server key: any web page can spend that key from its visitors' browsers");
}
const explorers: Partial<Record<LandingPage, string>> = {
  sandbox: "Apollo Sandbox (its script comes from Apollo's CDN; LANDING_PAGE=graphiql works offline)",
  graphiql: 'GraphiQL (served by the gateway itself; works offline)',
};
const explorer = explorers[config.landingPage];
if (explorer) console.log(`Open ${gateway.url} in a browser for ${explorer}.`);

/**
 * The typed client example's manifest (examples/client/), served beside freeform documents by the
 * embedded demo when no PERSISTED_DOCUMENTS is set; undefined where the example is not installed
 * (a production install keeps only dist/, schema/ and node_modules).
 */
function exampleDocuments(): PersistedDocumentsConfig | undefined {
  const path = fileURLToPath(new URL('../examples/client/__generated__/persisted-documents.json', import.meta.url));
  return existsSync(path) ? { path, only: false } : undefined;
}

/** The start-up line about trusted documents: how many are served, from where, and whether only they run. */
function persistedDocumentsLine(): string | undefined {
  const served = config.persistedDocuments;
  const count = gateway.persistedDocuments;
  if (served === undefined || count === undefined) return undefined;
  const listed = `${count} document${count === 1 ? '' : 's'}`;
  if (served === demoDocuments) {
    return `Persisted documents: ${listed} of the typed client example (npm run example:client -- --persisted); freeform documents run too (demo only; set PERSISTED_DOCUMENTS for your own)`;
  }
  return served.only
    ? `Persisted documents: ${listed} from ${served.path}; safelisting on (PERSISTED_DOCUMENTS_ONLY=true): no other document runs`
    : `Persisted documents: ${listed} from ${served.path}; safelisting off: freeform documents run too (PERSISTED_DOCUMENTS_ONLY=true refuses them)`;
}

/**
 * OpenTelemetry, when an OTLP endpoint is configured: a tracer provider that exports batches of
 * spans over OTLP/HTTP, its resource named by OTEL_SERVICE_NAME (and OTEL_RESOURCE_ATTRIBUTES). The
 * exporter and the SDK read the rest of OTEL_* themselves: endpoint, headers, timeout, sampler,
 * batch sizes. Imported only then, so a gateway that does not trace loads none of it.
 * `shutdown(ms)` flushes what is left and says whether it made it within `ms`.
 */
async function startTracing(
  tracing: TracingConfig,
  log: Logger,
): Promise<{ tracer: Tracer; shutdown(ms: number): Promise<boolean> }> {
  const [{ diag, DiagLogLevel }, { OTLPTraceExporter }, resources, sdk] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  // The SDK reports what goes wrong (a collector that refuses or does not answer) through diag; the
  // log gets it at warn, once a minute at most, since a collector that is down fails every batch.
  let warnedAt = Number.NEGATIVE_INFINITY;
  const warn = (message: string, ...args: unknown[]): void => {
    if (Date.now() - warnedAt < 60_000) return;
    warnedAt = Date.now();
    // Errors arrive serialised as JSON, stack and all: the message is what an operator needs.
    let text = message;
    try {
      text = String(JSON.parse(message).message ?? message);
    } catch {}
    log.warn({ detail: args.map(String) }, `OpenTelemetry: ${text} (repeats are not logged for a minute)`);
  };
  const quiet = (): void => {};
  diag.setLogger({ error: warn, warn, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.WARN);
  const resource = resources
    .defaultResource()
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
    .merge(resources.resourceFromAttributes({ 'service.name': tracing.serviceName }));
  const provider = new sdk.BasicTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter())],
  });
  return {
    tracer: provider.getTracer('petstore-graphql-gateway'),
    shutdown: (ms) =>
      Promise.race([
        provider.shutdown().then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
      ]),
  };
}

/** Why a TCP connection to the upstream cannot be made within 3 s, or undefined when it can. */
function unreachable(url: URL): Promise<string | undefined> {
  return new Promise((resolve) => {
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const socket = connect({ host: url.hostname, port, timeout: 3_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('did not accept a connection within 3 s');
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'ECONNREFUSED' ? 'refused the connection' : `could not be reached (${error.code})`),
    );
  });
}
