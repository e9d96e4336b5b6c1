/**
 * A tiny fetch client for the reference Pet Store in tests: every call returns the status, the
 * headers and the raw body text, so int64 ids can be checked digit for digit. Bodies are parsed
 * with lossless-json (every JSON integer becomes a bigint), never with JSON.parse.
 */

import { isInteger, parse } from 'lossless-json';
import { expect } from 'vitest';

export interface StoreResponse {
  readonly status: number;
  readonly headers: Headers;
  /** The body exactly as sent. */
  readonly text: string;
}

export interface CallOptions {
  readonly method?: string;
  /** API key sent as `Authorization: Bearer <key>`; omit (or `null`) to send no key. */
  readonly key?: string | null;
  /** A raw Authorization header, sent instead of the bearer key (for wrong schemes). */
  readonly authorization?: string;
  /** A JSON body is sent with `Content-Type: application/json`. */
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Calls `path` (starting with `/`, relative to a base URL ending in /v1) or an absolute URL. */
export async function callStore(baseUrl: string, path: string, options: CallOptions = {}): Promise<StoreResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  else if (options.key != null) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  const url = /^https?:/.test(path) ? path : `${baseUrl}${path}`;
  const response = await fetch(url, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** A client bound to one store and one key. */
export interface PetstoreClient {
  get(path: string, options?: Omit<CallOptions, 'method' | 'body'>): Promise<StoreResponse>;
  post(path: string, body: string, options?: Omit<CallOptions, 'method' | 'body'>): Promise<StoreResponse>;
  call(path: string, options?: CallOptions): Promise<StoreResponse>;
}

export function petstoreClient(baseUrl: string, key: string | null): PetstoreClient {
  return {
    get: (path, options) => callStore(baseUrl, path, { key, ...options, method: 'GET' }),
    post: (path, body, options) => callStore(baseUrl, path, { key, ...options, method: 'POST', body }),
    call: (path, options) => callStore(baseUrl, path, { key, ...options }),
  };
}

/** Parses JSON exactly: integers become bigint, other numbers become number. */
export function parseJson(text: string): unknown {
  return parse(text, null, (digits) => (isInteger(digits) ? BigInt(digits) : Number(digits)));
}

/** A pet as parsed by parseJson. */
export interface ParsedPet {
  readonly id: bigint;
  readonly name: string;
  readonly categoryId: bigint;
  readonly status: string;
}

/** Asserts an application/json 200/201 body holding one pet with exactly the Pet fields, and returns it. */
export function expectPet(response: StoreResponse): ParsedPet {
  expect(response.headers.get('content-type')).toBe('application/json');
  const pet = parseJson(response.text) as ParsedPet;
  expect(Object.keys(pet).sort()).toEqual(['categoryId', 'id', 'name', 'status']);
  expect(typeof pet.id).toBe('bigint');
  expect(typeof pet.categoryId).toBe('bigint');
  return pet;
}

/** Asserts an application/json body that is a Pets array, and returns it. */
export function expectPets(response: StoreResponse): ParsedPet[] {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/json');
  const pets = parseJson(response.text);
  expect(Array.isArray(pets)).toBe(true);
  return pets as ParsedPet[];
}

/** Asserts the spec's Error body `{ code, message, status }` with status equal to the HTTP status. */
export function expectError(response: StoreResponse, status: number, code: string): string {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = parseJson(response.text) as Record<string, unknown>;
  expect(body).toEqual({ code, message: expect.any(String), status: BigInt(status) });
  expect(body.message).not.toBe('');
  return body.message as string;
}
