// Mutation testing of the budget core (issue 43): `npm run test:mutation`. Not part of CI (an hour
// or more on 2 cores); docs/architecture.md gives the last score.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: ['src/gateway/upstream/limits/**/*.ts'],
  coverageAnalysis: 'perTest',
  // Three runners on two cores: the Redis fallback tests spend most of their time waiting.
  concurrency: 3,
  timeoutMS: 30_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 90, low: 80, break: 80 },
  // A rerun after new tests runs only the mutants whose code or covering tests changed.
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
