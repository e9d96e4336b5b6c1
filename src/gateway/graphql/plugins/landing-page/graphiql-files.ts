/**
 * Where GraphiQL's browser files come from. graphiql 3 ships a UMD build, and React 18 UMD builds
 * (the last releases of each to do so), so the page needs no bundling step. The packages are
 * development dependencies: `npm run build` copies the four files into dist/graphiql/, and the
 * built gateway serves those copies, so a production install carries neither the packages nor
 * their own dependencies (about 55 MB the browser files do not use). Run from src/, the files come
 * straight from node_modules.
 */

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where GraphiQL's files are served; each URL names its package version, so it never changes. */
export const GRAPHIQL_PREFIX = '/graphiql/';

const JS = 'text/javascript; charset=utf-8';
/** The page's files: [package, file in it, Content-Type]. */
export const GRAPHIQL_FILES = {
  react: ['react', 'umd/react.production.min.js', JS],
  reactDom: ['react-dom', 'umd/react-dom.production.min.js', JS],
  script: ['graphiql', 'graphiql.min.js', JS],
  styles: ['graphiql', 'graphiql.min.css', 'text/css; charset=utf-8'],
} as const;
export type GraphiqlFileName = keyof typeof GRAPHIQL_FILES;

export interface GraphiqlFile {
  /** Path the gateway serves it at, e.g. /graphiql/graphiql@3.9.0/graphiql.min.js. */
  readonly url: string;
  readonly type: string;
  /** Where it is on disk. */
  readonly path: string;
}

/** Beside the compiled module: dist/graphiql/ (from src/, a folder that does not exist). */
const BUILT = new URL('../../../../graphiql/', import.meta.url);
const BUILT_INDEX = new URL('files.json', BUILT);

/** The copies `npm run build` made, else the installed packages; a file missing fails at start. */
export function locateGraphiqlFiles(): Record<GraphiqlFileName, GraphiqlFile> {
  if (!existsSync(BUILT_INDEX)) return installedGraphiqlFiles();
  const urls = JSON.parse(readFileSync(BUILT_INDEX, 'utf8')) as Record<GraphiqlFileName, string>;
  return mapFiles((name, [, , type]) => {
    const url = urls[name];
    return { url, type, path: fileURLToPath(new URL(url.slice(GRAPHIQL_PREFIX.length), BUILT)) };
  });
}

/** The files in the installed packages (what `npm run build` copies). */
export function installedGraphiqlFiles(): Record<GraphiqlFileName, GraphiqlFile> {
  const require = createRequire(import.meta.url);
  return mapFiles((_name, [pkg, file, type]) => {
    const manifest = require.resolve(`${pkg}/package.json`);
    const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
    return { url: `${GRAPHIQL_PREFIX}${pkg}@${version}/${file}`, type, path: join(dirname(manifest), file) };
  });
}

function mapFiles(
  locate: (name: GraphiqlFileName, entry: (typeof GRAPHIQL_FILES)[GraphiqlFileName]) => GraphiqlFile,
): Record<GraphiqlFileName, GraphiqlFile> {
  const entries = Object.entries(GRAPHIQL_FILES) as [GraphiqlFileName, (typeof GRAPHIQL_FILES)[GraphiqlFileName]][];
  return Object.fromEntries(entries.map(([name, entry]) => [name, locate(name, entry)])) as Record<
    GraphiqlFileName,
    GraphiqlFile
  >;
}
