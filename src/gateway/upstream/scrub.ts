/**
 * Cuts an API key out of text an upstream sends back before a client may see it (an error message
 * that echoes the Authorization header, say). The key is found as is and case-insensitively, and
 * in the encodings a server might use on the way: percent-encoding, base64 and base64url, also
 * where it sits inside a longer encoded value (as in base64 of "Bearer <key>"). A server that
 * echoes only part of the key (its own cut of a long header, a prefix "for reference") must not
 * give it away either: any run of FRAGMENT_LENGTH or more of the key's characters is cut too.
 */

const REDACTED = '[redacted]';
/** Keys shorter than this are too short to look for in encoded text without cutting innocent words. */
const MIN_ENCODED_LENGTH = 6;
/**
 * The shortest run of a key's characters cut wherever it appears. Seven characters or fewer may
 * still be shown: of a 32-character key that leaves 25 or more unknown. Shorter keys than
 * FRAGMENT_MIN_KEY are only cut whole (their runs would be most of them, or innocent words).
 */
const FRAGMENT_LENGTH = 8;
const FRAGMENT_MIN_KEY = 12;

interface Scrubber {
  readonly forms: readonly string[];
  /** The same, upper-cased. */
  readonly upper: readonly string[];
  /** Compiled on the first text that holds a form. */
  pattern?: RegExp;
  /** The upper-cased key's runs of FRAGMENT_LENGTH characters; empty for a short key. */
  readonly runs: ReadonlySet<string>;
  /** The upper-cased key's aligned blocks of 4: every run of 7 or more characters holds one. */
  readonly blocks: readonly string[];
}

const scrubbers = new Map<string, Scrubber>();

export function scrubSecret(text: string, secret: string): string {
  if (secret === '' || text === '') return text;
  let scrubber = scrubbers.get(secret);
  if (scrubber === undefined) {
    const found = forms(secret);
    scrubber = { forms: found, upper: found.map((form) => form.toUpperCase()), ...fragments(secret) };
    // One per key seen; client keys are unbounded, so the memo is small and cleared when full.
    if (scrubbers.size >= 1_000) scrubbers.clear();
    scrubbers.set(secret, scrubber);
  }
  // Upstream text almost never holds the key, and every refused key is a new one: a plain search
  // first, since compiling a case-insensitive pattern for each cost ~70 µs. It can only err towards
  // the pattern: two characters equal under /i (without /u) have the same toUpperCase().
  const upper = text.toUpperCase();
  if (scrubber.upper.some((form) => upper.includes(form))) {
    scrubber.pattern ??= new RegExp(scrubber.forms.map(escapeRegExp).join('|'), 'gi');
    text = text.replace(scrubber.pattern, REDACTED);
  }
  return cutRuns(text, scrubber);
}

function fragments(secret: string): Pick<Scrubber, 'runs' | 'blocks'> {
  if (secret.length < FRAGMENT_MIN_KEY) return { runs: new Set(), blocks: [] };
  const upper = secret.toUpperCase();
  const runs = new Set<string>();
  for (let at = 0; at + FRAGMENT_LENGTH <= upper.length; at++) runs.add(upper.slice(at, at + FRAGMENT_LENGTH));
  const blocks: string[] = [];
  for (let at = 0; at + 4 <= upper.length; at += 4) blocks.push(upper.slice(at, at + 4));
  return { runs, blocks };
}

/**
 * Cuts every run of FRAGMENT_LENGTH or more of the key's characters (case-insensitively), in one
 * pass over the text: the windows of FRAGMENT_LENGTH that are a run of the key, merged where they
 * touch. A plain search for the key's aligned blocks first: text without one holds no such run.
 */
function cutRuns(text: string, scrubber: Scrubber): string {
  if (scrubber.runs.size === 0) return text;
  const upper = text.toUpperCase();
  // toUpperCase can change the length (ß → SS); such text is matched as it is, runs found in it are exact.
  const subject = upper.length === text.length ? upper : text;
  if (!scrubber.blocks.some((block) => subject.includes(block))) return text;
  let out = '';
  let copied = 0;
  let cutEnd = -1;
  for (let at = 0; at + FRAGMENT_LENGTH <= subject.length; at++) {
    if (!scrubber.runs.has(subject.slice(at, at + FRAGMENT_LENGTH))) continue;
    if (at > cutEnd) {
      out += text.slice(copied, at) + REDACTED;
    }
    cutEnd = at + FRAGMENT_LENGTH;
    copied = cutEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
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
