/**
 * The layout's rules, checked on the import graph of src/ (docs/architecture.md draws it): the
 * gateway's layers import downward only (edge → graphql → upstream → observability → shared), the
 * upstream layer speaks REST and never GraphQL, the reference store and the gateway do not import
 * each other, and there is no import cycle, type-only imports included.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every import specifier of a file: static, type-only, re-exports and dynamic imports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(['"])([^'"]+)\1/gm)) {
    found.push(match[2] as string);
  }
  return found;
}

const files = sources(SRC).map((path) => relative(SRC, path));
/** Relative imports, resolved to files under src/; packages by name. */
const graph = new Map<string, { local: string[]; packages: string[] }>(
  files.map((file) => {
    const all = specifiers(readFileSync(join(SRC, file), 'utf8'));
    const local = all
      .filter((s) => s.startsWith('.'))
      .map((s) => relative(SRC, resolve(dirname(join(SRC, file)), s)).replace(/\.js$/, '.ts'));
    return [file, { local, packages: all.filter((s) => !s.startsWith('.')) }];
  }),
);

/** The gateway's layers, top to bottom; a file may import its own layer and those below it. */
const LAYERS = ['edge', 'graphql', 'upstream', 'observability', 'shared'] as const;

function layerOf(file: string): number | undefined {
  const match = /^gateway\/([^/]+)\//.exec(file);
  const index = match ? LAYERS.indexOf(match[1] as (typeof LAYERS)[number]) : -1;
  return index === -1 ? undefined : index;
}

describe('the import graph of src/', () => {
  it('resolves every relative import to a file of src/', () => {
    const missing = [...graph].flatMap(([file, { local }]) =>
      local.filter((target) => !graph.has(target)).map((target) => `${file} → ${target}`),
    );
    expect(missing).toEqual([]);
  });

  it('has each layer of the gateway import only its own and those below it', () => {
    const upward: string[] = [];
    for (const [file, { local }] of graph) {
      const from = layerOf(file);
      if (from === undefined) continue;
      for (const target of local) {
        const to = layerOf(target);
        if (target === 'gateway/server.ts' || (to !== undefined && to < from)) upward.push(`${file} → ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps GraphQL out of the upstream layer and everything below it', () => {
    const graphqlImports = [...graph].flatMap(([file, { packages }]) =>
      (layerOf(file) ?? -1) >= LAYERS.indexOf('upstream')
        ? packages.filter((p) => /^(graphql|@apollo\/|dataloader)/.test(p)).map((p) => `${file} → ${p}`)
        : [],
    );
    expect(graphqlImports).toEqual([]);
  });

  it('keeps the reference store and the gateway apart (only main.ts starts both)', () => {
    const crossing = [...graph].flatMap(([file, { local }]) =>
      local
        .filter(
          (target) =>
            (file.startsWith('petstore/') && target.startsWith('gateway/')) ||
            (file.startsWith('gateway/') && target.startsWith('petstore/')),
        )
        .map((target) => `${file} → ${target}`),
    );
    expect(crossing).toEqual([]);
  });

  it('has no import cycle, type-only imports included', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      path.push(file);
      for (const target of graph.get(file)?.local ?? []) {
        if (state.get(target) === 'open') cycles.push([...path.slice(path.indexOf(target)), target].join(' → '));
        else if (!state.has(target) && graph.has(target)) visit(target);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it('keeps every folder of the gateway to about a dozen files', () => {
    const counts = new Map<string, number>();
    for (const file of files) counts.set(dirname(file), (counts.get(dirname(file)) ?? 0) + 1);
    expect([...counts].filter(([, count]) => count > 12)).toEqual([]);
  });
});
