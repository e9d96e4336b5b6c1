/** Writing the pet store's JSON: Error bodies, and pets with their int64 ids as exact JSON numbers. */

import type { ServerResponse } from 'node:http';
import type { Pet } from './store.js';

/** The `code` values of the store's Error bodies (docs/rest-interface.md, "Status and error codes"). */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'rate_limited'
  | 'key_banned'
  | 'internal_error';

export function sendJson(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

const errorCodes = new WeakMap<ServerResponse, ErrorCode>();

/** Sends the spec's Error body `{ code, message, status }`. */
export function sendError(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  errorCodes.set(res, code);
  sendJson(res, status, JSON.stringify({ code, message, status }));
}

/** The code of the Error body a response carried, if it was one (for request records). */
export function errorCodeOf(res: ServerResponse): ErrorCode | undefined {
  return errorCodes.get(res);
}

/** JSON for one pet; bigint ids are written as bare digits, never rounded through a double. */
export function petJson(pet: Pet): string {
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId},"status":"${pet.status}"}`;
}

export function petsJson(pets: readonly Pet[]): string {
  return `[${pets.map(petJson).join(',')}]`;
}
