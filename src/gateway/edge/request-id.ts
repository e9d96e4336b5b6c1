/** The request id of an HTTP request: logged on its lines and sent upstream as `X-Request-Id`. */

import { randomUUID } from 'node:crypto';

/** A client's X-Request-Id is kept when it is a plain token of at most 128 characters; otherwise a new one. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : randomUUID();
}
