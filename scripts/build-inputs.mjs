/**
 * What dist/ was built from: a SHA-256 over the paths and contents of everything `npm run build`
 * reads, kept in dist/.build-inputs. `npm start` (scripts/prestart.mjs) builds only when it differs.
 *
 * By content, not by modification time: a checkout, `git stash` or a copy that keeps old times
 * change times in ways that say nothing about content. Hashing the inputs (about 1 MB) takes
 * milliseconds; the build takes seconds.
 *
 * `npm run build` runs `begin` first and `done` last: the digest is of the inputs as they were when
 * the build began (a file edited during the build makes the next start build again), and a build
 * that fails part-way leaves no digest, so the next start builds again too.
 */

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = new URL('../', import.meta.url);
/** What the build reads: tsconfig.build.json's include, the GraphiQL copy, the installed versions. */
const INPUTS = [
  'src',
  'schema',
  'scripts/copy-graphiql.mjs',
  'scripts/copy-lua.mjs',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
];
/** The digest of the inputs dist/ was built from. */
export const STAMP = new URL('dist/.build-inputs', ROOT);
const PENDING = new URL('dist/.build-inputs.pending', ROOT);

/** The inputs' digest now; a file added, removed or renamed changes it too. */
export function inputsDigest() {
  const hash = createHash('sha256');
  const add = (path) => {
    const url = new URL(path, ROOT);
    if (!existsSync(url)) return void hash.update(`absent ${path}\0`);
    if (statSync(url).isDirectory()) {
      for (const name of readdirSync(url).sort()) add(`${path}/${name}`);
      return;
    }
    const content = readFileSync(url);
    hash.update(`${path}\0${content.length}\0`);
    hash.update(content);
  };
  for (const input of INPUTS) add(input);
  return hash.digest('hex');
}

/** The digest dist/ was built from, or undefined when there is none (never built, or a build failed). */
export function builtDigest() {
  return existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : undefined;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const step = process.argv[2];
  if (step === 'begin') {
    rmSync(STAMP, { force: true });
    mkdirSync(new URL('dist/', ROOT), { recursive: true });
    writeFileSync(PENDING, `${inputsDigest()}\n`);
  } else if (step === 'done') {
    renameSync(PENDING, STAMP);
  } else {
    console.error('usage: node scripts/build-inputs.mjs begin|done');
    process.exit(2);
  }
}
