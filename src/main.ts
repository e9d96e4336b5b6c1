/**
 * `npm start`: read the configuration, start the embedded reference Pet Store when no upstream is
 * configured, and serve the gateway. The only place that reads the environment or picks ports.
 */

import { ConfigError, type LandingPage, parseConfig } from './config.js';
import { createLogger } from './gateway/logger.js';
import { createGateway } from './gateway/server.js';
import { demoCatalogue } from './petstore/seed.js';
import { DEMO_KEY, type PetstoreHandle, startPetstore } from './petstore/start.js';

let config: ReturnType<typeof parseConfig>;
try {
  config = parseConfig(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`gateway: ${error.message}`);
  process.exit(1);
}
const logger = createLogger(config.logLevel);
/** Apollo's drain grace period (10 s) plus time to close the pool and Redis. */
const SHUTDOWN_DEADLINE_MS = 15_000;

let embedded: PetstoreHandle | undefined;
if (config.petstoreBaseUrl === undefined) {
  // No upstream configured: front an in-process reference store on a free port, so Sandbox works with no setup.
  embedded = await startPetstore({ port: 0, seed: demoCatalogue() });
  config = Object.freeze({ ...config, petstoreBaseUrl: embedded.url, apiKey: config.apiKey ?? DEMO_KEY });
}

const gateway = await createGateway(config, { logger });
console.log(`Pet Store GraphQL gateway ready at ${gateway.url}`);
console.log(
  embedded
    ? `Upstream: the embedded reference Pet Store at ${embedded.url} (demo catalogue; set PETSTORE_BASE_URL to front a real one)`
    : `Upstream: ${config.petstoreBaseUrl}`,
);
const explorers: Partial<Record<LandingPage, string>> = {
  sandbox: "Apollo Sandbox (its script comes from Apollo's CDN; LANDING_PAGE=graphiql works offline)",
  graphiql: 'GraphiQL (served by the gateway itself; works offline)',
};
const explorer = explorers[config.landingPage];
if (explorer) console.log(`Open ${gateway.url} in a browser for ${explorer}.`);

/**
 * SIGTERM/SIGINT: stop accepting, let in-flight requests finish (Apollo's drain plugin gives them
 * its grace period), close the upstream pool, Redis and the embedded store, exit 0. A second signal,
 * or a shutdown that overruns its deadline, exits at once.
 */
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) process.exit(1);
  stopping = true;
  logger.info({ signal }, 'shutting down');
  setTimeout(() => {
    logger.error('shutdown overran its deadline; exiting');
    process.exit(1);
  }, SHUTDOWN_DEADLINE_MS).unref();
  await gateway.close();
  await embedded?.close();
  logger.flush();
  process.exit(0);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(signal));
