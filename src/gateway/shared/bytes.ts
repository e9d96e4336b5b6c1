/**
 * What a kept string really costs the heap, for memories bounded in bytes. V8 stores a string's
 * characters one byte each when every one is Latin-1 (U+0000–U+00FF), else two bytes each (UTF-16),
 * after a header of 16 bytes (map, hash, length; 8-byte aligned). UTF-8 byte counts would undercount
 * the two-byte case, and `length` would undercount it by half. V8 picks the one-byte form by content
 * when it decodes bytes (`Buffer#toString`) or parses JSON (measured: 1.0 byte a character for
 * Latin-1 text, even from a body that is two-byte elsewhere).
 *
 * A string built by concatenation is another matter: lossless-json (upstream/json.ts, for bodies
 * with long digit runs) builds each string a character at a time, a rope of one 32-byte node per
 * character (measured: 32 bytes a character kept, and a 7 MB name was 224 MB) until V8 flattens it,
 * which reading any character does, in place. So counting a string here flattens it first.
 */

/** Characters outside Latin-1: a string holding one is stored two bytes per character. */
const NOT_LATIN1 = /[\u0100-\uffff]/;
const HEADER = 16;
/**
 * Below this length V8 never makes a rope (`ConsString::kMinLength`): such strings are flat already,
 * and are counted at two bytes a character without a search (~80 ns each; ids, statuses, short names).
 */
const ROPE_FROM = 13;

/**
 * Bytes of heap `text` holds once kept, never fewer than V8 uses for a string decoded or parsed from
 * bytes. Flattens `text` if it is a rope (a regular expression reads it), so that this is what it
 * holds from now on. V8 answers the search at once for a one-byte string (0.02 ms for 7 MB here:
 * the class cannot match it), and reads a two-byte one up to its first wide character.
 */
export function stringBytes(text: string): number {
  if (text.length < ROPE_FROM) return HEADER + text.length * 2;
  return HEADER + text.length * (NOT_LATIN1.test(text) ? 2 : 1);
}
