import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Integration tests start real servers on port 0; two workers keep a 2-core machine responsive.
    maxWorkers: 2,
  },
});
