/**
 * `npm start` runs dist/main.js; this runs first. Where TypeScript is installed (a development
 * checkout: `npm ci && npm start`) it builds when anything the build reads has changed since dist/
 * was built (scripts/build-inputs.mjs), so that what runs is never stale and a start with nothing
 * changed, or one that only reports a bad setting, does not wait for tsc. Where TypeScript is not
 * installed (a production install: `npm run build`, then `npm prune --omit=dev` or
 * `npm ci --omit=dev`) it runs the dist/ already built, and needs nothing else.
 */

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { builtDigest, inputsDigest } from './build-inputs.mjs';

const MAIN = new URL('../dist/main.js', import.meta.url);

function typescriptInstalled() {
  try {
    createRequire(import.meta.url).resolve('typescript/bin/tsc');
    return true;
  } catch {
    return false;
  }
}

if (typescriptInstalled()) {
  if (existsSync(MAIN) && builtDigest() === inputsDigest()) process.exit(0);
  // npm_execpath is the npm that runs this script; run its build script rather than repeat it here.
  const npm = process.env.npm_execpath;
  const build = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build', '--silent'], { stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(build.status ?? 1);
}
if (!existsSync(MAIN)) {
  console.error('npm start: dist/main.js is missing and TypeScript is not installed: run npm ci, then npm run build');
  process.exit(1);
}
