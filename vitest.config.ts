import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Fails the run if any process a test started is still alive at the end.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Integration tests start real servers on port 0; two workers keep a 2-core machine responsive.
    maxWorkers: 2,
  },
});
