/** int64 ids as GraphQL ID strings, and the opaque, sealed cursors of the `pets` connection. */

import { createCipheriv, createDecipheriv, createHash, createHmac, createSecretKey, randomBytes } from 'node:crypto';
import { isPositiveInt64, parseInt64 } from '../../int64.js';
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

/** Cursors for one API key: sealed with the gateway's secret and bound to the key. */
export interface Cursors {
  encode(position: CursorPosition): string;
  /** A client's cursor; anything not sealed by this gateway for this key is BAD_USER_INPUT. */
  decode(cursor: string): CursorPosition;
}

export interface CursorCodec {
  forKey(keyId: string): Cursors;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Longer than any cursor this gateway makes (a page path of a few hundred characters). */
const MAX_CURSOR_LENGTH = 2_048;

/**
 * Cursors are sealed with AES-256-GCM under a key derived from `secret`, with the API key's digest
 * as associated data. Sealing (not only signing) keeps the upstream's page URLs from clients, a
 * link that carries the API key included; the tag makes any change, or another key's cursor, fail.
 * The IV is an HMAC of the plaintext, so one position always gives the same cursor and distinct
 * positions never share an IV.
 */
export function createCursorCodec(secret: string | Buffer = randomBytes(32)): CursorCodec {
  // KeyObjects, not Buffers: node:crypto takes a Buffer key through isKeyObject and isCryptoKey
  // checks on every cipher and HMAC it makes, which on Node 24 cost 10 µs per cursor decoded
  // against 2.3 µs with a KeyObject (Node 20: 2.3 against 2.2), and 8% of the gateway's CPU on the
  // bench's distinct mix, whose requests carry cursors.
  const derive = (label: string) => createSecretKey(createHash('sha256').update(label).update(secret).digest());
  const encryptionKey = derive('petstore-cursor-encryption\0');
  const ivKey = derive('petstore-cursor-iv\0');
  return {
    forKey(keyId) {
      const aad = Buffer.from(keyId, 'utf8');
      return {
        encode(position) {
          const plain = Buffer.from(
            JSON.stringify({
              p: position.page,
              o: position.offset,
              ...(position.status ? { s: position.status } : {}),
            }),
          );
          const iv = createHmac('sha256', ivKey).update(aad).update(plain).digest().subarray(0, IV_BYTES);
          const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv).setAAD(aad);
          const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
          return sealed.toString('base64url');
        },
        decode(cursor) {
          const invalid = () => badUserInput('after is not a cursor this API gave for this API key');
          if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
          const sealed = Buffer.from(cursor, 'base64url');
          if (sealed.length <= IV_BYTES + TAG_BYTES) throw invalid();
          let value: unknown;
          try {
            const decipher = createDecipheriv('aes-256-gcm', encryptionKey, sealed.subarray(0, IV_BYTES))
              .setAAD(aad)
              .setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
            const plain = Buffer.concat([
              decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
              decipher.final(),
            ]);
            value = JSON.parse(plain.toString('utf8'));
          } catch {
            throw invalid();
          }
          const { p, o, s } = (value ?? {}) as Record<string, unknown>;
          // Sealed by us, so well-formed; checked all the same, as a secret can leak.
          if (typeof p !== 'string' || !p.startsWith('/') || p.startsWith('//')) throw invalid();
          if (!Number.isSafeInteger(o) || (o as number) < 0 || (o as number) > 10_000) throw invalid();
          if (s !== undefined && typeof s !== 'string') throw invalid();
          return { page: p, offset: o as number, status: s };
        },
      };
    },
  };
}
