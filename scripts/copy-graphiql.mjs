/**
 * Part of `npm run build`, after tsc: copies GraphiQL's browser files from their (development)
 * packages into dist/graphiql/, under the paths the gateway serves them at, with an index the
 * built gateway reads (src/gateway/graphql/plugins/landing-page/graphiql-files.ts). A production install then
 * needs neither graphiql nor React.
 */

import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  GRAPHIQL_PREFIX,
  installedGraphiqlFiles,
} from '../dist/gateway/graphql/plugins/landing-page/graphiql-files.js';

const out = fileURLToPath(new URL('../dist/graphiql/', import.meta.url));
// Copies of an earlier version would otherwise linger beside the new ones.
rmSync(out, { recursive: true, force: true });
const files = installedGraphiqlFiles();
const index = {};
for (const [name, { url, path }] of Object.entries(files)) {
  const target = join(out, url.slice(GRAPHIQL_PREFIX.length));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(path, target);
  index[name] = url;
}
writeFileSync(join(out, 'files.json'), `${JSON.stringify(index, null, 2)}\n`);
