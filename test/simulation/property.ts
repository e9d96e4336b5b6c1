/**
 * The budget simulation's property, for each family of schedules (one test file each, so families
 * run side by side): schedules drawn by fast-check (scenario.ts) run against the gateway's real
 * upstream layer and a simulated upstream with the reference store's rules (run.ts), every one
 * checked against the budget's invariants (invariants.ts).
 *
 * SIM_RUNS schedules in all (default 1,000), shared out among the families: each runs half of its
 * part from a fixed seed (the same every run, so a regression shows as the same failure) and half
 * from a fresh one (new schedules each run). A
 * failure prints its seed, path and shrunk schedule (also as JSON); `SIM_SEED=<seed> SIM_PATH=<path>`
 * replays exactly that one in the family's file (`npx vitest run test/simulation/<family>.test.ts`).
 * SIM_FRESH=0 runs the fixed seed only.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { violationsOf } from './invariants.js';
import { runScenario } from './run.js';
import { FAMILY_NAMES, scenarioArb } from './scenario.js';

const runs = Math.ceil(Number(process.env.SIM_RUNS ?? 1_000) / (2 * FAMILY_NAMES.length));
const replay =
  process.env.SIM_SEED === undefined
    ? undefined
    : { seed: Number(process.env.SIM_SEED), path: process.env.SIM_PATH, endOnFailure: true };
const FIXED_SEED = 20261127;
const fresh = Date.now() % 2 ** 31;

export function simulate(family: string): void {
  describe(`the budget simulation: ${family} schedules`, () => {
    const property = fc.asyncProperty(scenarioArb({ families: [family] }), async (scenario) => {
      // The schedule as JSON too (fast-check prints it as JavaScript), for a replay to read.
      expect(violationsOf(scenario, await runScenario(scenario)), JSON.stringify(scenario)).toEqual([]);
    });
    const check = (seed: number) => fc.assert(property, replay ?? { numRuns: runs, seed, endOnFailure: true });
    // Generous time-outs: SIM_RUNS may ask for thousands.
    it.skipIf(replay !== undefined)('keeps every invariant on the fixed schedules', () => check(FIXED_SEED), 3_600_000);
    // SIM_FRESH=0 (mutation testing) runs the fixed seed only: the same verdict on the same code.
    it.skipIf(replay === undefined && process.env.SIM_FRESH === '0')(
      replay ? 'keeps every invariant on the schedule replayed' : 'keeps every invariant on fresh schedules',
      () => check(fresh),
      3_600_000,
    );
  });
}
