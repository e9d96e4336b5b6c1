/**
 * dist/ built once before the system files run, as npm start would (only when stale): in a fresh
 * clone the first of them each started a gateway with npm start at the same moment, and each ran
 * its own tsc into the same dist/. (The isolated project's only: a run of unit files builds nothing.)
 */

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function setup(): void {
  const prestart = fileURLToPath(new URL('../scripts/prestart.mjs', import.meta.url));
  const built = spawnSync(process.execPath, [prestart], { stdio: 'inherit' });
  if (built.status !== 0)
    throw new Error(`scripts/prestart.mjs (the build npm start runs) failed: exit ${built.status}`);
}
