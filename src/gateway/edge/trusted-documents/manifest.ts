/**
 * The persisted-documents manifest (PERSISTED_DOCUMENTS), read once at start: `{ "sha256:<hex>":
 * "<document>" }`, as graphql-codegen's client preset writes it (`persistedDocuments: {
 * hashAlgorithm: 'sha256' }`). A file that cannot be read, is not JSON, has another shape or lists a
 * hash that is not its document's stops start-up with a ConfigError naming the variable: a manifest
 * that lies would have clients' ids run documents they never sent, and an id is only worth trusting
 * because anyone can check it (the hash is the document's SHA-256, so it is checked, in a few ms).
 */

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../../config.js';

export interface Manifest {
  /** Listed documents by the hex of their SHA-256 (lowercase, no `sha256:`). */
  readonly byHash: ReadonlyMap<string, string>;
  /** The listed documents' texts, for the character-for-character check of freeform documents. */
  readonly documents: ReadonlySet<string>;
}

const KEY = /^sha256:([0-9a-f]{64})$/;
const VARIABLE = 'PERSISTED_DOCUMENTS';

/** Reads and checks the manifest at `path`; throws a one-line ConfigError naming PERSISTED_DOCUMENTS. */
export function loadManifest(path: string): Manifest {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError(`${VARIABLE} names ${path}, which cannot be read (${code})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ConfigError(`${VARIABLE} names ${path}, which is not valid JSON`);
  }
  return parseManifest(value, path);
}

/** Checks a parsed manifest's shape and hashes (exported for the unit tests). */
export function parseManifest(value: unknown, path: string): Manifest {
  const shape = `${VARIABLE} names ${path}, which must be a JSON object of "sha256:<hex>": "<document>" (npm run codegen writes one)`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(shape);
  const byHash = new Map<string, string>();
  for (const [key, document] of Object.entries(value)) {
    const hex = KEY.exec(key)?.[1];
    if (hex === undefined || typeof document !== 'string' || document === '') throw new ConfigError(shape);
    const actual = createHash('sha256').update(document, 'utf8').digest('hex');
    if (actual !== hex) {
      throw new ConfigError(
        `${VARIABLE} names ${path}, which lists ${key.slice(0, 20)}… for a document whose SHA-256 is ${actual.slice(0, 12)}…: regenerate it (npm run codegen)`,
      );
    }
    byHash.set(hex, document);
  }
  return Object.freeze({ byHash, documents: new Set(byHash.values()) });
}
