import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The tests Stryker runs against each mutant of src/gateway/upstream/limits/ (`npm run
 * test:mutation`): the upstream layer's unit tests and the budget simulation, nothing that starts a
 * gateway. Every run must give the same verdict on the same code, so the simulation runs its fixed
 * seeds only (SIM_FRESH=0), and the budget's Redis tests use one redis-server (its Cluster and
 * Sentinel runs test the connection, not the rules a mutant changes). A survivor runs every test
 * that reaches it, so the simulation runs 20 schedules across its families and the budget log's
 * property 25 cases (fewer than `npm test`'s, to keep a run of all 1,742 mutants near two hours).
 */
const { projects: _projects, ...test } = base.test ?? {};

export default defineConfig({
  ...base,
  test: {
    ...test,
    include: ['test/unit/gateway/upstream/**/*.test.ts', 'test/simulation/**/*.test.ts'],
    globalSetup: [],
    sequence: {},
    env: { SIM_RUNS: '20', SIM_FRESH: '0', BUDGET_REDIS: 'single', PROPERTY_RUNS: '25' },
  },
});
