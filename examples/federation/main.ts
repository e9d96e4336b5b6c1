/**
 * `npm run example:federation`: the pet store subgraph (this project's gateway, in front of the
 * embedded reference Pet Store), the adoptions subgraph that extends Pet, and a router
 * (@apollo/gateway) that composes both. Ports: the router on PORT (default 4000), the pet store
 * subgraph on PORT + 1, the adoptions subgraph on PORT + 2. PET_LOOKUP and LOG_LEVEL apply as usual.
 */

import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/gateway/logger.js';
import { createGateway } from '../../src/gateway/server.js';
import { demoCatalogue } from '../../src/petstore/seed.js';
import { DEMO_KEY, startPetstore } from '../../src/petstore/start.js';
import { startAdoptionsSubgraph } from './adoptions.js';
import { startRouter } from './router.js';

const port = Number(process.env.PORT ?? 4000);
const store = await startPetstore({ port: 0, seed: demoCatalogue() });
const config = parseConfig({
  LOG_LEVEL: 'warn',
  ...process.env,
  PORT: String(port + 1),
  PETSTORE_BASE_URL: store.url,
  PETSTORE_API_KEY: DEMO_KEY,
});
const logger = createLogger(config.logLevel);
const petstore = await createGateway(config, { logger });
const adoptions = await startAdoptionsSubgraph({ port: port + 2, featured: ['3', '42', '9007199254740993'] });
const router = await startRouter({
  port,
  logger,
  subgraphs: [
    { name: 'petstore', url: petstore.url },
    { name: 'adoptions', url: adoptions.url },
  ],
});

console.log(`Subgraph petstore:  ${petstore.url} (in front of the embedded Pet Store at ${store.url})`);
console.log(`Subgraph adoptions: ${adoptions.url}`);
console.log(`Router ready at ${router.url}`);

async function shutdown(): Promise<void> {
  await router.close();
  await adoptions.close();
  await petstore.close();
  await store.close();
  process.exit(0);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void shutdown());
