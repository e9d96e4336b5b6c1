import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SUITE = '@apollo/server-integration-testsuite';

/**
 * One graphql module in the tests, the one Node loads in production. graphql has no "exports" map,
 * so Node resolves it by its "main" for every importer: the CommonJS build, which @apollo/server
 * (loaded by Node here too) uses. Vite would resolve the files it transforms (the gateway's src/,
 * the tests) to graphql's ESM build through its "module" field: two graphql modules, two
 * GraphQLError classes, and an error made by the gateway would not be `instanceof` the one Apollo
 * Server checks, as it is in production. So `graphql` resolves here as `require` does.
 *
 * Apollo's integration test suite is written for Jest. It is transformed here (not loaded as an
 * external package) so that its `@jest/globals` import can be pointed at vitest; its schemas would
 * be rejected as "from another module or realm" by the graphql @apollo/server uses without the above.
 */
function oneGraphqlAndJestSuite(): Plugin {
  return {
    name: 'one-graphql-and-apollo-suite-under-vitest',
    enforce: 'pre',
    resolveId(source, importer) {
      if (importer === undefined) return null;
      // Only transformed files come here (src/, the tests, the inlined suite): Node loads the rest.
      if (source === 'graphql' || source.startsWith('graphql/')) return createRequire(importer).resolve(source);
      if (source === '@jest/globals' && importer.includes(`/node_modules/${SUITE}/`)) {
        return fileURLToPath(new URL('./test/helpers/jest-globals.ts', import.meta.url));
      }
      return null;
    },
  };
}

/**
 * The files that take 10 s or more in a fresh clone's run on a 2-core machine (an install in their
 * setup, tens of thousands of requests, or windows of seconds), longest first. Vitest orders by the
 * last run's durations when it has them, and by file size on a fresh clone, where small slow files
 * came last: one worker ran many-keys alone for its last 80 s, another rate-limits-429 for 20 s.
 * Longest first keeps every worker busy to the end.
 */
const SLOW_FIRST = [
  'test/system/production-install.test.ts',
  'test/system/federation-hive.test.ts',
  'test/system/many-keys.test.ts',
  'test/system/shutdown.test.ts',
  'test/integration/gateway/budget-integrity.test.ts',
  'test/system/redis-tls.test.ts',
  'test/system/redis-ha.test.ts',
  'test/integration/gateway/rate-limits-redis.test.ts',
  'test/integration/gateway/upstream-faults.test.ts',
  'test/simulation/across.test.ts',
  'test/system/persisted-startup.test.ts',
  'test/system/redis-auth.test.ts',
  'test/simulation/replicas.test.ts',
  'test/integration/gateway/rate-limits.test.ts',
  'test/system/npm-start.test.ts',
  'test/integration/gateway/rate-limits-429.test.ts',
  'test/system/startup.test.ts',
  'test/system/memory-bounds.test.ts',
  'test/simulation/contention.test.ts',
  'test/integration/gateway/cost-and-budget.test.ts',
  'test/system/entry-point-footprint.test.ts',
  'test/system/graphiql-browser.test.ts',
  'test/integration/gateway/shared-executions.test.ts',
  'test/simulation/liar.test.ts',
  'test/simulation/mixed.test.ts',
];
// A name here that no longer exists (a file moved or split) would silently lose its place at the front.
for (const name of SLOW_FIRST) {
  if (!existsSync(fileURLToPath(new URL(name, import.meta.url)))) {
    throw new Error(`vitest.config.ts: SLOW_FIRST names ${name}, which does not exist`);
  }
}

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const index = SLOW_FIRST.findIndex((name) => file.moduleId.endsWith(name));
      return index === -1 ? SLOW_FIRST.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * Where each test file runs. Unit and integration files share their worker's modules (isolate off):
 * they start servers on port 0 and close them, and change no global that outlives a test (a time
 * zone is put back), and loading graphql, Apollo Server and the gateway afresh for each of 80 files
 * cost more CPU than the tests themselves: 119 s of CPU for test/integration isolated, 65 s shared,
 * same 926 tests (2 cores). The system files (child processes, Redis patched to count commands) and
 * the simulation (fake timers, a seeded Math.random) keep a module graph of their own.
 */
const SHARED = ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'];

export default defineConfig({
  plugins: [oneGraphqlAndJestSuite()],
  test: {
    // Fails the run if any process a test started is still alive at the end.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Five workers on a 2-core machine: much of the suite waits (rate windows, Retry-After, deadlines,
    // the registry during installs), and other files run in those waits. From a fresh clone with the
    // other core held busy by a shell loop, vitest's own Duration on Node 20 (which installs Hive
    // Gateway for the federation test and replays the image's npm ci, build and prune): 310 s with
    // four, 295 s with five (the same commit); earlier, 301-344 s with three.
    maxWorkers: 5,
    sequence: { sequencer: SlowFirst },
    server: { deps: { inline: [SUITE] } },
    projects: [
      { extends: true, test: { name: 'shared', include: SHARED, isolate: false } },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['test/**/*.test.ts'],
          exclude: SHARED,
          // Added to the root's global setup, which every project inherits (extends: true).
          globalSetup: ['test/build-setup.ts'],
        },
      },
    ],
  },
});
