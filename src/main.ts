/**
 * `npm start`: read the configuration, start the embedded reference Pet Store when no upstream is
 * configured, and serve the gateway. The only place that reads the environment or picks ports.
 */

import { ConfigError, parseConfig } from './config.js';
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
if (!config.production) console.log(`Open ${gateway.url} in a browser for Apollo Sandbox.`);

async function shutdown(): Promise<void> {
  await gateway.close();
  await embedded?.close();
  process.exit(0);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void shutdown());
