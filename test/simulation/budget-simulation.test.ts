/**
 * The budget core on a virtual clock: schedules drawn by fast-check (scenario.ts) run against the
 * gateway's real upstream layer and a simulated upstream with the reference store's rules (run.ts),
 * and every schedule is checked against the budget's invariants (invariants.ts).
 *
 * Each family of schedules runs from a fixed seed (the same schedules every run, so a regression
 * shows as the same failure) and from a fresh one (new schedules each run). A failure prints its
 * seed, path and shrunk schedule; `SIM_FAMILY=<family> SIM_SEED=<seed> SIM_PATH=<path>` replays exactly
 * that one, and
 * `SIM_RUNS=<n>` runs n schedules per family and seed instead of the default.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { violationsOf } from './invariants.js';
import { runScenario } from './run.js';
import { FAMILY_NAMES, scenarioArb } from './scenario.js';

const runs = Number(process.env.SIM_RUNS ?? 130);
const replay =
  process.env.SIM_SEED === undefined
    ? undefined
    : { seed: Number(process.env.SIM_SEED), path: process.env.SIM_PATH, endOnFailure: true };
const FIXED_SEED = 20261127;
const fresh = Date.now() % 2 ** 31;

const families = process.env.SIM_FAMILY === undefined ? FAMILY_NAMES : [process.env.SIM_FAMILY];

describe.each(families)('the budget simulation: %s schedules', (family) => {
  const property = fc.asyncProperty(scenarioArb({ families: [family] }), async (scenario) => {
    // The schedule as JSON too (fast-check prints it as JavaScript), for the replay tools to read.
    expect(violationsOf(scenario, await runScenario(scenario)), JSON.stringify(scenario)).toEqual([]);
  });
  const check = (seed: number) => fc.assert(property, replay ?? { numRuns: runs, seed, endOnFailure: true });

  it.skipIf(replay !== undefined)('keeps every invariant on the fixed schedules', () => check(FIXED_SEED), 120_000);
  it(
    replay ? 'keeps every invariant on the schedule replayed' : 'keeps every invariant on fresh schedules',
    () => check(fresh),
    120_000,
  );
});
