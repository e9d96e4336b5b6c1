/**
 * int64-exact JSON for upstream bodies. `JSON.parse` rounds integers above 2^53, and the
 * reviver's `context.source` exists only from Node 21, so bodies that hold a long digit run are
 * parsed with lossless-json; the rest take the fast native parser, which is exact for them.
 */

import { isLosslessNumber, parse } from 'lossless-json';
import { parseInt64 } from '../../int64.js';
import type { UpstreamErrorBody } from './errors.js';
import type { PetModel } from './models.js';
import { scrubSecret } from './scrub.js';

/**
 * Bodies the native parser cannot read exactly: a digit run of 16 or more (an integer past 15
 * digits may not fit a double), or a fraction or exponent (12.0 would read as the integer 12).
 * Matches inside strings only send a body down the slower exact path.
 */
const NOT_PLAIN_INTEGERS = /[0-9]{16}|[0-9][.eE]/;

/**
 * Parses JSON exactly: numbers come back as JS numbers only when every number in the body is a
 * short integer literal, otherwise as LosslessNumber. Throws on bad JSON.
 */
export function parseJson(text: string): unknown {
  return NOT_PLAIN_INTEGERS.test(text) ? parse(text) : JSON.parse(text);
}

/** An int64 id from a JSON number (or a decimal string, which some APIs send), as a decimal string. */
export function toId(value: unknown): string | undefined {
  // A safe integer is an int64 already, and its digits are exact: the common case, kept cheap.
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : undefined;
  let digits: string | undefined;
  if (isLosslessNumber(value)) digits = value.value;
  else if (typeof value === 'string') digits = value;
  const id = digits === undefined ? undefined : parseInt64(digits);
  return id === undefined ? undefined : String(id);
}

/** A Pet of the spec, or undefined when the value is not one. Fields the spec does not name are dropped. */
export function toPet(value: unknown): PetModel | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const id = toId(record.id);
  const categoryId = toId(record.categoryId);
  const { name, status } = record;
  if (id === undefined || categoryId === undefined || typeof name !== 'string') return undefined;
  if (status !== undefined && status !== null && typeof status !== 'string') return undefined;
  return { id, name, categoryId, status: status ?? undefined };
}

/** A JSON array of Pet, or undefined. */
export function toPets(value: unknown): PetModel[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const pets: PetModel[] = [];
  for (const item of value) {
    const pet = toPet(item);
    if (pet === undefined) return undefined;
    pets.push(pet);
  }
  return pets;
}

/**
 * Longest body read as an Error body. The spec's is `{ code, message, status }`, a few hundred
 * bytes; a larger one is not parsed at all (the error is reported without it), so an upstream
 * cannot make each refusal cost a parse, a scrub and copies of megabytes.
 */
export const MAX_ERROR_BODY = 64 * 1024;
/** Longest `code` and `message` a client sees: the spec's codes are one short word. */
export const MAX_ERROR_CODE = 100;
export const MAX_ERROR_MESSAGE = 500;

/**
 * The spec's Error body, when a body is one, with `secret` (the API key the request carried) cut
 * out of its text. Each string is scrubbed whole and only then cut to length (DESIGN.md section 3):
 * cut first, a key that began near the end would be left whole enough to find but short enough to
 * pass; scrubbed first, what the cut may split is a `[redacted]` mark, never a key.
 */
export function toErrorBody(text: string, secret: string): UpstreamErrorBody | undefined {
  if (text.length > MAX_ERROR_BODY) return undefined;
  let value: unknown;
  try {
    value = parseJson(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { code, message, status } = value as Record<string, unknown>;
  const statusNumber = isLosslessNumber(status) ? Number(status.value) : status;
  if (typeof code !== 'string' || typeof message !== 'string' || typeof statusNumber !== 'number') return undefined;
  return {
    code: cut(scrubSecret(code, secret), MAX_ERROR_CODE),
    message: cut(scrubSecret(message, secret), MAX_ERROR_MESSAGE),
    status: statusNumber,
  };
}

/** `text` in at most `max` UTF-16 units, ending in `…` when cut, never in half a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}
