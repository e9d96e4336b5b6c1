/**
 * int64-exact JSON for upstream bodies. `JSON.parse` rounds integers above 2^53, and the
 * reviver's `context.source` exists only from Node 21, so a body that holds a number the native
 * parser cannot read exactly is parsed with lossless-json when it is small (a page of 100 pets),
 * and when it is large by the native parser, after one linear pass over the text has written each
 * such number as a marked string that a reviver reads back as a LosslessNumber. lossless-json builds
 * strings a character at a time: a 7 MB name became a 224 MB rope and took 7 s to parse, which one
 * hostile page could use to exhaust the heap; on a small page it is the faster of the two (76 µs
 * against 99 µs for 20 pets with ids above 2^53, measured side by side).
 */

import { isLosslessNumber, LosslessNumber, parse } from 'lossless-json';
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
 * Parses JSON exactly: numbers come back as JS numbers when the native parser reads them exactly
 * (short integer literals), otherwise as LosslessNumber. Throws on bad JSON.
 */
export function parseJson(text: string): unknown {
  if (!NOT_PLAIN_INTEGERS.test(text)) return JSON.parse(text);
  return text.length <= LOSSLESS_PARSER_MAX ? parse(text) : JSON.parse(quoteInexactNumbers(text), revive);
}

/** The longest body lossless-json parses (its strings cost about 32 times their length while it builds them). */
const LOSSLESS_PARSER_MAX = 64 * 1024;

/**
 * What marks a number kept as its text, as written in JSON: an escaped U+0000 at the start of a
 * string (doubled, it marks a string that began with U+0000 itself).
 */
const MARK = '\\u0000';

function revive(_key: string, value: unknown): unknown {
  if (typeof value !== 'string' || value.charCodeAt(0) !== 0) return value;
  return value.charCodeAt(1) === 0 ? value.slice(1) : new LosslessNumber(value.slice(1));
}

const QUOTE = 34;
const BACKSLASH = 92;
const MINUS = 45;

/**
 * `text` with every number the native parser would not read exactly written as a string that
 * starts with U+0000, and every string that starts with U+0000 given a second one, so the two never
 * meet. Invalid JSON stays invalid (a number is only rewritten as a whole token). Linear in `text`.
 */
function quoteInexactNumbers(text: string): string {
  const parts: string[] = [];
  let copied = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // A string: it begins with an escaped U+0000, which must not read as a mark, or it does not.
      if (text.startsWith(MARK, i + 1)) {
        parts.push(text.slice(copied, i + 1), MARK);
        copied = i + 1;
      }
      i++;
      while (i < text.length) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i += 2;
        else if (d === QUOTE) break;
        else i++;
      }
      i++;
      continue;
    }
    if (c === MINUS || (c >= 48 && c <= 57)) {
      const start = i;
      let digits = 0;
      let exact = true;
      if (c === MINUS) i++;
      for (; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d >= 48 && d <= 57) digits++;
        else if (d === 46 || d === 101 || d === 69 || d === 43 || d === MINUS) exact = false;
        else break;
      }
      if (!exact || digits >= 16) {
        parts.push(text.slice(copied, start), `"${MARK}${text.slice(start, i)}"`);
        copied = i;
      }
      continue;
    }
    i++;
  }
  if (copied === 0) return text;
  parts.push(text.slice(copied));
  return parts.join('');
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
 * out of its text. Each string is scrubbed whole and only then cut to length (the README's Errors
 * table, `upstream`): cut first, a key that began near the end would be left whole enough to find but short enough to
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
