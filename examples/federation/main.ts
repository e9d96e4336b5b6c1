/**
 * `npm run example:federation`: the pet store subgraph (this project's gateway, in front of the
 * embedded reference Pet Store), the adoptions subgraph that extends Pet, and a router in front of
 * both, serving the supergraph composed from supergraph.yaml. ROUTER=hive (default) runs Hive
 * Gateway as a child process (installed on demand); ROUTER=apollo runs @apollo/gateway in-process.
 * Ports: the router on PORT (default 4000) on HOST (default 127.0.0.1: it fronts the demo key, so
 * serving the network is a choice, as for the gateway); the subgraphs on PORT + 1 and PORT + 2 on
 * 127.0.0.1 only, so clients reach them through the router. PET_LOOKUP and LOG_LEVEL apply as usual.
 * One SIGINT or SIGTERM to this process (or to `npm run`, which passes it on) stops all three and
 * says so in a last line.
 */

import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ConfigError, parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/gateway/observability/logger.js';
import { createGateway } from '../../src/gateway/server.js';
import { demoCatalogue } from '../../src/petstore/seed.js';
import { DEMO_KEY, startPetstore } from '../../src/petstore/start.js';
import { startAdoptionsSubgraph } from './adoptions.js';
import { ensureHiveGateway, type HiveLogLevel, PortInUseError, startHiveRouter } from './hive-router.js';
import { startRouter } from './router.js';
import { composeSupergraph, readSupergraphConfig } from './supergraph.js';

const SUBGRAPH_HOST = '127.0.0.1';
const SUPERGRAPH_YAML = fileURLToPath(new URL('./supergraph.yaml', import.meta.url));
const SUPERGRAPH_FILE = fileURLToPath(new URL('./supergraph.graphql', import.meta.url));

function fail(message: string): never {
  console.error(`example:federation: ${message}`);
  process.exit(1);
}

const router = process.env.ROUTER ?? 'hive';
if (router !== 'hive' && router !== 'apollo') fail('ROUTER must be hive or apollo');
const port = Number(process.env.PORT ?? 4000);
if (!Number.isInteger(port) || port < 1 || port > 65_533) fail('PORT must be an integer from 1 to 65533');
let routerHost: string;
try {
  // The gateway's own reading of HOST: the same default and the same accepted values.
  routerHost = parseConfig({ HOST: process.env.HOST }).host;
} catch (error) {
  fail((error as Error).message);
}

// All three ports are checked before anything starts, so a taken one is one line, not a half-started example.
for (const [candidate, host] of [
  [port, routerHost],
  [port + 1, SUBGRAPH_HOST],
  [port + 2, SUBGRAPH_HOST],
] as const) {
  if (!(await isFree(candidate, host)))
    fail(`port ${candidate} is already in use (PORT=${port} uses ${port}..${port + 2})`);
}
if (router === 'hive') await ensureHiveGateway((line) => console.log(line));

const stops: (() => Promise<void>)[] = [];
let stopping = false;
async function shutdown(code: number, why?: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  if (why) console.log(`example:federation: ${why}: the router, both subgraphs and the Pet Store are stopped`);
  process.exit(code);
}
// on(), not once(): Ctrl-C under npm delivers SIGINT twice (from the terminal, and passed on by
// npm), and a second one with no handler left would kill this process before Hive Gateway is stopped.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(0, signal));

try {
  const store = await startPetstore({ port: 0, seed: demoCatalogue() });
  stops.push(() => store.close());
  const config = parseConfig({
    LOG_LEVEL: 'warn',
    ...process.env,
    PORT: String(port + 1),
    PETSTORE_BASE_URL: store.url,
    // The embedded store knows only its demo key.
    PETSTORE_API_KEY: DEMO_KEY,
  });
  const logger = createLogger(config.logLevel);
  const petstore = await createGateway(config, { logger, host: SUBGRAPH_HOST });
  stops.push(() => petstore.close());
  const adoptions = await startAdoptionsSubgraph({
    port: port + 2,
    host: SUBGRAPH_HOST,
    featured: ['3', '42', '9007199254740993'],
  });
  stops.push(() => adoptions.close());
  console.log(`Subgraph petstore:  ${petstore.url} (in front of the embedded Pet Store at ${store.url})`);
  console.log(`Subgraph adoptions: ${adoptions.url}`);

  // The same composition as `npm run supergraph:compose`, with the routing URLs these subgraphs really have.
  const { supergraphSdl } = await composeSupergraph(readSupergraphConfig(SUPERGRAPH_YAML), {
    routingUrls: { petstore: petstore.url, adoptions: adoptions.url },
  });
  writeFileSync(SUPERGRAPH_FILE, supergraphSdl);
  console.log(`Supergraph: ${SUPERGRAPH_FILE} (composed from supergraph.yaml)`);

  if (router === 'hive') {
    const hive = await startHiveRouter({
      supergraphFile: SUPERGRAPH_FILE,
      port,
      host: routerHost,
      env: process.env,
      logLevel: hiveLogLevel(config.logLevel),
      // Hive Gateway writes an empty line as it stops.
      onLine: (line) => line.trim() && console.error(`[hive-gateway] ${line}`),
    });
    stops.push(() => hive.close());
    void hive.exited.then(() => {
      if (stopping) return;
      console.error('example:federation: Hive Gateway exited; stopping the subgraphs');
      void shutdown(1);
    });
    console.log(`Router (Hive Gateway, pid ${hive.pid}) ready at ${hive.url}`);
  } else {
    const apollo = await startRouter({ port, host: routerHost, logger, supergraphSdl });
    stops.push(() => apollo.close());
    // Apollo Server serves any path; /graphql keeps the URL the same as Hive Gateway's.
    console.log(`Router (@apollo/gateway) ready at ${new URL('graphql', apollo.url)}`);
  }
} catch (error) {
  if (error instanceof PortInUseError || (error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    console.error(`example:federation: a port of ${port}..${port + 2} was taken while starting`);
  } else if (error instanceof ConfigError) {
    console.error(`example:federation: ${error.message}`);
  } else {
    console.error('example:federation: could not start:', error);
  }
  await shutdown(1);
}

function isFree(candidate: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(candidate, host, () => probe.close(() => resolve(true)));
  });
}

/** Hive Gateway's levels; it refuses pino's `silent` and `fatal`. */
function hiveLogLevel(level: string): HiveLogLevel {
  if (level === 'debug' || level === 'trace') return 'debug';
  if (level === 'info' || level === 'warn') return level;
  return 'error';
}
