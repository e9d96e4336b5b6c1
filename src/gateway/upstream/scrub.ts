/**
 * Cuts an API key out of text an upstream sends back before a client may see it (an error message
 * that echoes the Authorization header, say). The key is found as is and case-insensitively, and
 * in the encodings a server might use on the way: percent-encoding, base64 and base64url, also
 * where it sits inside a longer encoded value (as in base64 of "Bearer <key>").
 */

const REDACTED = '[redacted]';
/** Keys shorter than this are too short to look for in encoded text without cutting innocent words. */
const MIN_ENCODED_LENGTH = 6;

interface Scrubber {
  readonly forms: readonly string[];
  /** The same, upper-cased. */
  readonly upper: readonly string[];
  /** Compiled on the first text that holds a form. */
  pattern?: RegExp;
}

const scrubbers = new Map<string, Scrubber>();

export function scrubSecret(text: string, secret: string): string {
  if (secret === '' || text === '') return text;
  let scrubber = scrubbers.get(secret);
  if (scrubber === undefined) {
    const found = forms(secret);
    scrubber = { forms: found, upper: found.map((form) => form.toUpperCase()) };
    // One per key seen; client keys are unbounded, so the memo is small and cleared when full.
    if (scrubbers.size >= 1_000) scrubbers.clear();
    scrubbers.set(secret, scrubber);
  }
  // Upstream text almost never holds the key, and every refused key is a new one: a plain search
  // first, since compiling a case-insensitive pattern for each cost ~70 µs. It can only err towards
  // the pattern: two characters equal under /i (without /u) have the same toUpperCase().
  const upper = text.toUpperCase();
  if (!scrubber.upper.some((form) => upper.includes(form))) return text;
  scrubber.pattern ??= new RegExp(scrubber.forms.map(escapeRegExp).join('|'), 'gi');
  return text.replace(scrubber.pattern, REDACTED);
}

/** The secret's forms, longest first so a longer match wins. */
function forms(secret: string): string[] {
  const found = new Set([secret, encodeURIComponent(secret)]);
  if (secret.length >= MIN_ENCODED_LENGTH) {
    const bytes = Buffer.from(secret, 'utf8');
    // In base64 each 3 bytes become 4 characters, so the key's encoding depends on where it starts
    // in the encoded value: for each of the 3 offsets, keep the characters that depend on key bytes only.
    for (let offset = 0; offset < 3; offset++) {
      const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
      const encoded = padded.toString('base64').replace(/=+$/, '');
      const start = offset === 0 ? 0 : Math.ceil((offset * 4) / 3);
      const whole = Math.floor((padded.length * 4) / 3);
      const core = encoded.slice(start, whole);
      if (core.length >= 4) {
        found.add(core);
        found.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
      }
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
