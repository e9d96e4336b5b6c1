import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SUITE = '@apollo/server-integration-testsuite';

/**
 * Apollo's integration test suite is written for Jest. It is transformed here (not loaded as an
 * external package) so that its `@jest/globals` import can be pointed at vitest. Being transformed,
 * its `graphql` import would resolve through Vite to graphql's ESM build, while @apollo/server,
 * loaded by Node, uses the CommonJS one: two graphql modules, and every schema the suite builds is
 * rejected as "from another module or realm". graphql has no "exports" map, so resolving it as
 * `require` does gives exactly the file Node gives @apollo/server.
 */
function jestSuiteUnderVitest(): Plugin {
  return {
    name: 'apollo-integration-suite-under-vitest',
    enforce: 'pre',
    resolveId(source, importer) {
      if (importer === undefined || !importer.includes(`/node_modules/${SUITE}/`)) return null;
      if (source === '@jest/globals') return fileURLToPath(new URL('./test/helpers/jest-globals.ts', import.meta.url));
      if (source === 'graphql' || source.startsWith('graphql/')) return createRequire(importer).resolve(source);
      return null;
    },
  };
}

/**
 * The files that take longest on a loaded 2-core machine (a fresh install or an install of a peer in
 * their setup, or tens of thousands of requests), longest first. Vitest orders by the last run's
 * durations when it has them, and by file size on a fresh clone, where these small files came last
 * and one worker ran many-keys alone for its last 80 s. Longest first keeps both workers busy to the end.
 */
const SLOW_FIRST = [
  'test/integration/production-install.test.ts',
  'test/integration/many-keys.test.ts',
  'test/integration/federation-hive.test.ts',
  'test/integration/budget-integrity.test.ts',
  'test/integration/rate-limits-redis.test.ts',
  'test/integration/rate-limits.test.ts',
];

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const index = SLOW_FIRST.findIndex((name) => file.moduleId.endsWith(name));
      return index === -1 ? SLOW_FIRST.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  plugins: [jestSuiteUnderVitest()],
  test: {
    include: ['test/**/*.test.ts'],
    // Fails the run if any process a test started is still alive at the end.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Integration tests start real servers on port 0; two workers keep a 2-core machine responsive.
    maxWorkers: 2,
    sequence: { sequencer: SlowFirst },
    server: { deps: { inline: [SUITE] } },
  },
});
