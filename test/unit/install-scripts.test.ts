/**
 * npm 11 runs no dependency's install script unless package.json's `allowScripts` allows it, and
 * warns at every install about each one it has not been told about ("install-scripts … not yet
 * covered by allowScripts"). Every package of the lockfile with an install script must therefore
 * have its entry, and no entry may outlive its package. The real `npm ci` is checked for the
 * warning in test/system/production-install.test.ts and by .ci/run.
 */

import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

const read = (file: string) => JSON.parse(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8'));

interface LockEntry {
  readonly hasInstallScript?: boolean;
}

/** The names of the lockfile's packages that have an install script (the lockfile records it as npm reads it). */
function withInstallScripts(): string[] {
  const { packages } = read('package-lock.json') as { packages: Record<string, LockEntry> };
  const names = Object.entries(packages)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  return [...new Set(names)].sort();
}

it("declares in package.json's allowScripts every dependency with an install script, and only those", () => {
  const { allowScripts } = read('package.json') as { allowScripts?: Record<string, boolean> };
  expect(withInstallScripts().length).toBeGreaterThan(0);
  expect(Object.keys(allowScripts ?? {}).sort()).toEqual(withInstallScripts());
});
