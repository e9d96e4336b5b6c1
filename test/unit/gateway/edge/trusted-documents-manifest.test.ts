/**
 * The persisted-documents manifest loader (src/gateway/edge/trusted-documents/manifest.ts), on real
 * files in a scratch folder: graphql-codegen's manifest loads; a missing file, invalid JSON, another
 * shape, or a hash that is not its document's is one ConfigError line naming PERSISTED_DOCUMENTS.
 */

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../src/config.js';
import { loadManifest } from '../../../../src/gateway/edge/trusted-documents/manifest.js';

const dir = mkdtempSync(join(tmpdir(), 'manifest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
let files = 0;
function file(text: string): string {
  const path = join(dir, `m${files++}.json`);
  writeFileSync(path, text);
  return path;
}

describe('loadManifest', () => {
  it("loads the typed client's manifest, as graphql-codegen wrote it, by hash and by text", () => {
    const path = fileURLToPath(
      new URL('../../../../examples/client/__generated__/persisted-documents.json', import.meta.url),
    );
    const manifest = loadManifest(path);
    expect(manifest.byHash.size).toBe(4);
    for (const [hex, document] of manifest.byHash) {
      expect(sha256(document)).toBe(hex);
      expect(manifest.documents.has(document)).toBe(true);
    }
  });

  it('keeps documents exactly as listed, whitespace and all', () => {
    const document = 'query  A {\n  __typename\n}';
    const manifest = loadManifest(file(JSON.stringify({ [`sha256:${sha256(document)}`]: document })));
    expect([...manifest.documents]).toEqual([document]);
  });

  it('loads an empty manifest', () => {
    expect(loadManifest(file('{}')).byHash.size).toBe(0);
  });

  it('refuses a file that cannot be read, naming the variable and the path', () => {
    const path = join(dir, 'missing.json');
    expect(() => loadManifest(path)).toThrow(
      new ConfigError(`PERSISTED_DOCUMENTS names ${path}, which cannot be read (ENOENT)`),
    );
  });

  it('refuses a file that is not JSON', () => {
    const path = file('{ "sha256:ab": ');
    expect(() => loadManifest(path)).toThrow(
      new ConfigError(`PERSISTED_DOCUMENTS names ${path}, which is not valid JSON`),
    );
  });

  it.each([
    ['an array', '[]'],
    ['a string', '"query"'],
    ['a key without sha256:', JSON.stringify({ [sha256('{ a }')]: '{ a }' })],
    ['a short hash', JSON.stringify({ 'sha256:abc': '{ a }' })],
    ['a document that is not a string', JSON.stringify({ [`sha256:${sha256('{ a }')}`]: { query: '{ a }' } })],
    ['an empty document', JSON.stringify({ [`sha256:${sha256('')}`]: '' })],
    ["Apollo's manifest format", JSON.stringify({ format: 'apollo-persisted-query-manifest', operations: [] })],
  ])('refuses %s: only the client preset shape is read', (_, text) => {
    const path = file(text);
    expect(() => loadManifest(path)).toThrow(
      new ConfigError(
        `PERSISTED_DOCUMENTS names ${path}, which must be a JSON object of "sha256:<hex>": "<document>" (npm run codegen writes one)`,
      ),
    );
  });

  it('refuses a manifest that lists a hash that is not its document’s', () => {
    const path = file(JSON.stringify({ [`sha256:${sha256('{ a }')}`]: '{ b }' }));
    expect(() => loadManifest(path)).toThrow(ConfigError);
    expect(() => loadManifest(path)).toThrow(
      /^PERSISTED_DOCUMENTS names .* which lists sha256:.* for a document whose SHA-256 is [0-9a-f]{12}…: regenerate it \(npm run codegen\)$/,
    );
  });
});
