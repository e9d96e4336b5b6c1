import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vitest/config';

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
    server: { deps: { inline: [SUITE] } },
  },
});
