/** int64 ids as GraphQL ID strings, and the opaque cursors of the `pets` connection. */

import { isPositiveInt64, parseInt64 } from '../int64.js';
import { badUserInput } from './errors.js';

/** A pet or category id from a client: an int64 in decimal. Throws BAD_USER_INPUT otherwise. */
export function parseIdArgument(value: unknown, field: string, positive = false): string {
  // Federation representations are JSON from a router, so an id may be missing or of any type.
  const id = typeof value === 'string' ? parseInt64(value.trim()) : undefined;
  if (id === undefined || (positive && !isPositiveInt64(id))) {
    throw badUserInput(`${field} must be ${positive ? 'a positive' : 'an'} int64 integer written in decimal`);
  }
  return String(id);
}

/**
 * Where a connection continues: the upstream page's path and query (from a Link header, so no
 * parameter names are assumed), how many of its pets were already returned, and the status filter
 * the page belongs to. The origin is never part of a cursor: pages are only fetched from the
 * configured upstream.
 */
export interface CursorPosition {
  readonly page: string;
  readonly offset: number;
  readonly status: string | undefined;
}

export function encodeCursor(position: CursorPosition): string {
  const value = { p: position.page, o: position.offset, ...(position.status ? { s: position.status } : {}) };
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * Decodes a client's cursor; anything that is not one of ours is BAD_USER_INPUT. `isAllowedPage`
 * judges the page after URL resolution, where `%2e%2e` has already become `..` and been applied.
 */
export function decodeCursor(cursor: string, isAllowedPage: (page: string) => boolean): CursorPosition {
  const invalid = () => badUserInput('after is not a cursor from this API');
  if (cursor.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const { p, o, s } = (value ?? {}) as Record<string, unknown>;
  if (typeof p !== 'string' || !p.startsWith('/') || p.startsWith('//') || !isAllowedPage(p)) throw invalid();
  if (!Number.isSafeInteger(o) || (o as number) < 0 || (o as number) > 10_000) throw invalid();
  if (s !== undefined && typeof s !== 'string') throw invalid();
  return { page: p, offset: o as number, status: s };
}
