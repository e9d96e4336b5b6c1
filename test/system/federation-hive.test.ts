/**
 * The gateway behind Hive Gateway, the router examples/federation runs by default: a real
 * `hive-gateway` child process (installed on demand into examples/federation/hive-gateway/ when
 * missing) serving the supergraph composed from examples/federation/supergraph.yaml, with its
 * gateway.config.ts, in front of this gateway (subgraph `petstore`) and the example's `adoptions`
 * subgraph, with the reference Pet Store behind the gateway.
 *
 * Between the router and each subgraph sits a recording HTTP proxy (test/helpers/recording-proxy.ts):
 * it changes nothing and shows the headers the router really sent to the subgraph. The gateway does
 * not itself pass `traceparent` on to the Pet Store, so the trace test observes the router → subgraph
 * hop, which is the router's part of the job.
 *
 * And the example as its README runs it, `npm run example:federation`: the router on loopback, and one
 * SIGINT to npm's pid stopping npm, the example and its Hive Gateway child (here, where Hive Gateway
 * is known to be installed: a second install running beside this file's would share its folder).
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type SubgraphHandle, startAdoptionsSubgraph } from '../../examples/federation/adoptions.js';
import {
  ensureHiveGateway,
  type HiveRouterHandle,
  PortInUseError,
  startHiveRouter,
} from '../../examples/federation/hive-router.js';
import {
  composeSupergraph,
  readSupergraphConfig,
  type SupergraphConfig,
} from '../../examples/federation/supergraph.js';
import { demoCatalogue } from '../../src/petstore/seed.js';
import { gql } from '../helpers/gql.js';
import { descendants, freePort, killTree, type Started, startUntil, waitGone } from '../helpers/processes.js';
import { type RecordingProxy, startRecordingProxy } from '../helpers/recording-proxy.js';
import { type Stack, startStack, TEST_KEY } from '../helpers/start-stack.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SUPERGRAPH_YAML = fileURLToPath(new URL('../../examples/federation/supergraph.yaml', import.meta.url));
/** A first install downloads about 750 packages: one to three minutes on a busy 2-core machine. */
const INSTALL_TIMEOUT_MS = 300_000;
const START_TIMEOUT_MS = 120_000;

const CLIENT_KEY = 'client-key-5555555555';
/** One request a minute, on a store clock that stands still 15 s into a minute: Retry-After is 45. */
const LIMITED_KEY = 'limited-key-1111111111';
const ROOMY = { perMinute: 100_000, perDay: 1_000_000 };

const README_QUERY = '{ featuredPets { id name status adoptionFee category { id name } } }';
/** The answer examples/federation/README.md shows for README_QUERY (the demo catalogue, the example's featured ids). */
const README_ANSWER = {
  featuredPets: [
    { id: '3', name: 'Milo 1', status: 'PENDING', adoptionFee: 80, category: { id: '3', name: 'Birds' } },
    { id: '42', name: 'Nala 4', status: 'AVAILABLE', adoptionFee: 70, category: { id: '2', name: 'Cats' } },
    {
      id: '9007199254740993',
      name: 'Big Id',
      status: 'AVAILABLE',
      adoptionFee: 80,
      category: { id: '9007199254740995', name: 'Category 9007199254740995' },
    },
  ],
};

let stack: Stack;
let adoptions: SubgraphHandle;
let toPetstore: RecordingProxy;
let toAdoptions: RecordingProxy;
let router: HiveRouterHandle;
let routerPid = 0;
let workDir: string;
let config: SupergraphConfig;
let supergraphSdl: string;
/** What `featuredPets` returns; the adoptions subgraph reads it per request, so each test sets its own. */
const featured: string[] = [];

beforeAll(async () => {
  await ensureHiveGateway((line) => console.log(`federation-hive: ${line}`));
  // Ten minutes ahead of our clock, so the store's windows outlast the test: the gateway forgets the
  // upstream's word (and has no extensions.rateLimit to give with throttling off) once its reset has passed.
  const storeNow = Math.floor(Date.now() / 60_000) * 60_000 + 10 * 60_000 + 15_000;
  stack = await startStack({
    store: {
      seed: demoCatalogue(),
      keys: { [TEST_KEY]: ROOMY, [CLIENT_KEY]: ROOMY, [LIMITED_KEY]: { perMinute: 1, perDay: 1_000 } },
      now: () => storeNow,
    },
    // No client-side windows: the store's own 429 is what the limited key meets.
    env: { PETSTORE_RATE_LIMITS: 'off', PETSTORE_MAX_WAIT: '10s' },
  });
  adoptions = await startAdoptionsSubgraph({ port: 0, host: '127.0.0.1', featured });
  toPetstore = await startRecordingProxy(stack.gateway.url);
  toAdoptions = await startRecordingProxy(adoptions.url);
  config = readSupergraphConfig(SUPERGRAPH_YAML);
  ({ supergraphSdl } = await composeSupergraph(config, {
    routingUrls: { petstore: toPetstore.url, adoptions: toAdoptions.url },
  }));
  workDir = mkdtempSync(join(tmpdir(), 'federation-hive-'));
  writeFileSync(join(workDir, 'supergraph.graphql'), supergraphSdl);
  router = await startOnFreePort(join(workDir, 'supergraph.graphql'));
  routerPid = router.pid;
}, INSTALL_TIMEOUT_MS + START_TIMEOUT_MS);

afterAll(async () => {
  await router?.close();
  if (routerPid > 0) expect(isRunning(routerPid)).toBe(false);
  await toPetstore?.close();
  await toAdoptions?.close();
  await adoptions?.close();
  await stack?.close();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}, 30_000);

beforeEach(() => {
  stack.requests.length = 0;
  toPetstore.requests.length = 0;
  toAdoptions.requests.length = 0;
  featured.length = 0;
});

describe('the supergraph from supergraph.yaml', () => {
  it("is the same composed from the running subgraphs' _service { sdl } as from the checked-in schema files", async () => {
    const fromSubgraphs: SupergraphConfig = {
      ...config,
      subgraphs: config.subgraphs.map((subgraph) => ({
        ...subgraph,
        schema: {
          subgraphUrl: subgraph.name === 'petstore' ? stack.gateway.url : adoptions.url,
          introspectionHeaders: {},
        },
      })),
    };
    const composed = await composeSupergraph(fromSubgraphs, {
      routingUrls: { petstore: toPetstore.url, adoptions: toAdoptions.url },
    });
    expect(composed.supergraphSdl).toBe(supergraphSdl);
    expect(supergraphSdl).toContain(`@join__graph(name: "petstore", url: "${toPetstore.url}")`);
  });
});

describe('through Hive Gateway', () => {
  it("answers the README's query across both subgraphs: featuredPets → name, status (petstore) → category name", async () => {
    featured.push('3', '42', '9007199254740993');
    const response = await gql(router.url, README_QUERY);
    expect(response.status).toBe(200);
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data).toEqual(README_ANSWER);
    // One _entities call for the three pets, answered from the Pet Store's list pages with the configured key.
    expect(toPetstore.requests).toHaveLength(1);
    expect(stack.requests.length).toBeGreaterThan(0);
    expect(stack.requests.every((record) => record.operation === 'listPets' && record.key === TEST_KEY)).toBe(true);
  });

  it("forwards the client's Authorization to the pet store subgraph only, and the store sees the client's key", async () => {
    featured.push('3', '42');
    const response = await gql(router.url, '{ featuredPets { id name } }', { key: CLIENT_KEY });
    expect(response.body.errors).toBeUndefined();
    expect(toPetstore.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${CLIENT_KEY}`]);
    expect(toAdoptions.requests.length).toBeGreaterThan(0);
    for (const request of toAdoptions.requests) expect(request.headers.authorization).toBeUndefined();
    expect(stack.requests.length).toBeGreaterThan(0);
    expect(stack.requests.map((record) => record.key)).toEqual(stack.requests.map(() => CLIENT_KEY));
  });

  it("applies the client key's budget: RATE_LIMITED keeps extensions.code and retryAfter at the client, with no stack", async () => {
    const query = '{ pets(first: 2) { nodes { id } } }';
    const first = await gql(router.url, query, { key: LIMITED_KEY });
    expect(first.body.errors).toBeUndefined();
    const refused = await gql(router.url, query, { key: LIMITED_KEY });
    expect(refused.status).toBe(200);
    expect(refused.body.data).toBeNull();
    expect(refused.body.errors).toEqual([
      {
        message: 'the Pet Store rate limit is reached; retry after 45 s',
        path: ['pets'],
        // serviceName is Hive Gateway's addition: which subgraph the error came from.
        extensions: { code: 'RATE_LIMITED', retryAfter: 45, serviceName: 'petstore' },
      },
    ]);
    expect(JSON.stringify(refused.body)).not.toMatch(/stack|\.[jt]s:\d+/);
    expect(stack.requests.map((record) => [record.key, record.status])).toEqual([
      [LIMITED_KEY, 200],
      [LIMITED_KEY, 429],
    ]);
  });

  it('keeps UNAUTHENTICATED and the upstream error body for a key the store does not know', async () => {
    const response = await gql(router.url, '{ pets(first: 2) { nodes { id } } }', { key: 'unknown-key-000000' });
    expect(response.body.errors).toEqual([
      {
        message: 'the Pet Store did not accept the API key',
        path: ['pets'],
        extensions: {
          code: 'UNAUTHENTICATED',
          upstream: { code: 'unauthorized', message: 'invalid API key', status: 401 },
          serviceName: 'petstore',
        },
      },
    ]);
  });

  it('costs the same upstream requests for _entities of 100 pets as the same _entities sent to the gateway directly', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => String(i + 21));
    featured.push(...ids);
    const routed = await gql(router.url, '{ featuredPets { id name } }');
    expect(routed.body.errors).toBeUndefined();
    const names = new Map(demoCatalogue().map((pet) => [String(pet.id), pet.name]));
    expect(routed.body.data).toEqual({ featuredPets: ids.map((id) => ({ id, name: names.get(id) })) });
    // The router batches the 100 lookups into one _entities request to the subgraph.
    expect(toPetstore.requests).toHaveLength(1);
    const throughRouter = stack.requests.map((record) => record.operation);

    stack.requests.length = 0;
    const direct = await stack.query(
      'query ($representations: [_Any!]!) { _entities(representations: $representations) { ... on Pet { id name } } }',
      { variables: { representations: ids.map((id) => ({ __typename: 'Pet', id })) } },
    );
    expect(direct.body.errors).toBeUndefined();
    const sentDirectly = stack.requests.map((record) => record.operation);

    // Pets 21..120 of the demo catalogue span two list pages of 100: two requests, either way.
    expect(throughRouter).toEqual(['listPets', 'listPets']);
    expect(sentDirectly).toEqual(throughRouter);
  }, 30_000);

  it("passes the client's W3C traceparent and tracestate on to the pet store subgraph unchanged", async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const tracestate = 'vendor=opaque';
    const response = await gql(router.url, '{ pets(first: 1) { nodes { id } } }', {
      headers: { traceparent, tracestate },
    });
    expect(response.body.errors).toBeUndefined();
    expect(toPetstore.requests.map(({ headers }) => [headers.traceparent, headers.tracestate])).toEqual([
      [traceparent, tracestate],
    ]);
  });

  it("shows the client its key's budget: the example's plugin carries the subgraph's extensions.rateLimit", async () => {
    const response = await gql(router.url, '{ pets(first: 1) { nodes { id } } }', { key: CLIENT_KEY });
    expect(response.body.errors).toBeUndefined();
    // Hive Gateway alone drops subgraph response extensions; gateway.config.ts copies this one.
    expect(response.body.extensions).toEqual({
      rateLimit: {
        limit: 100_000,
        remaining: expect.any(Number),
        used: expect.any(Number),
        resetAt: expect.any(String),
      },
    });
    // The client's own key: its budget, not the configured key's, and spent by this request.
    const { rateLimit } = response.body.extensions as { rateLimit: { remaining: number } };
    expect(rateLimit.remaining).toBeLessThan(100_000);
  });
});

describe('npm run example:federation', () => {
  let npm: Started | undefined;
  afterEach(async () => {
    if (npm !== undefined) await killTree(npm.pid);
    npm = undefined;
  });

  it(
    'binds the router to loopback, and one SIGINT to npm stops npm, the example and Hive Gateway, with a last line',
    async () => {
      const port = await freeTriple();
      npm = await startUntil('npm', ['run', 'example:federation'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port) },
        ready: /Router \(Hive Gateway, pid (\d+)\) ready at (\S+)/,
        timeoutMs: START_TIMEOUT_MS,
        // Its own group, as under a terminal: the signal below goes to npm's pid alone all the same.
        detached: true,
      });
      expect(npm.ready[2]).toBe(`http://127.0.0.1:${port}/graphql`);
      expect(await listeningOn(port)).toEqual(['127.0.0.1']);
      expect((await gql(npm.ready[2] as string, '{ featuredPets { id } }')).body.errors).toBeUndefined();
      const below = await descendants(npm.pid);
      expect(below).toContain(Number(npm.ready[1]));

      process.kill(npm.pid, 'SIGINT');
      const stillRunning = new Promise((resolve) => setTimeout(() => resolve('still running after 20 s'), 20_000));
      expect(await Promise.race([npm.exited, stillRunning])).toEqual({ code: 0, signal: null });
      await waitGone(below, 15_000);
      expect(npm.output().trim().split('\n').at(-1)).toBe(
        'example:federation: SIGINT: the router, both subgraphs and the Pet Store are stopped',
      );
      expect(await listeningOn(port)).toEqual([]);
    },
    START_TIMEOUT_MS + 30_000,
  );
});

/** A port whose next two are free too (the example takes PORT, PORT + 1 and PORT + 2). */
async function freeTriple(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port > 65_533) continue;
    const free = await Promise.all([port + 1, port + 2].map((next) => isFree(next)));
    if (free.every(Boolean)) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '0.0.0.0', () => probe.close(() => resolve(true)));
  });
}

/** The addresses something listens on at `port` (IPv4, from /proc/net/tcp): '0.0.0.0' is every interface. */
async function listeningOn(port: number): Promise<string[]> {
  const table = await readFile('/proc/net/tcp', 'utf8');
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return table
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local, , state]) => state === '0A' && local?.endsWith(`:${hex}`))
    .map(([, local]) => {
      const address = (local as string).slice(0, 8);
      // Little-endian hex: 0100007F is 127.0.0.1.
      return [6, 4, 2, 0].map((at) => Number.parseInt(address.slice(at, at + 2), 16)).join('.');
    });
}

/** Hive Gateway reports the port it was given, so it gets a real free one; a port taken in between is retried. */
async function startOnFreePort(supergraphFile: string): Promise<HiveRouterHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startHiveRouter({
        supergraphFile,
        port: await freePort(),
        host: '127.0.0.1',
        env: process.env,
        logLevel: 'error',
        readyTimeoutMs: 90_000,
      });
    } catch (error) {
      if (!(error instanceof PortInUseError) || attempt === 3) throw error;
    }
  }
}

/** Signal 0 probes a pid without signalling it; ESRCH means the process is gone. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
