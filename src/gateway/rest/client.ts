/**
 * The REST client: the only user of undici. One keep-alive Pool for the upstream's origin; every
 * request goes through the per-key limiter; bodies are read with a size cap and parsed int64-exact;
 * upstream failures become the error codes of DESIGN.md section 3.
 */

import { GraphQLError } from 'graphql';
import { type Dispatcher, Pool } from 'undici';
import { fromUpstreamStatus, type UpstreamErrorBody, upstreamUnavailable } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PetModel } from '../models.js';
import { parseJson, toErrorBody, toPet, toPets } from './json.js';
import { type Limiter, passThroughLimiter } from './limiter.js';
import { isPetsPageUrl, nextLink } from './link.js';
import { parseRetryAfter } from './retry-after.js';
import type { ResponseSharing } from './sharing.js';

export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export interface PetPage {
  readonly pets: PetModel[];
  /** The next page, when the upstream linked one on our origin. */
  readonly next: URL | undefined;
}

export interface NewPetBody {
  readonly name: string;
  readonly categoryId: string;
  readonly status: string | undefined;
}

export interface RestClient {
  /** The base URL (ending in /v1) every request is made under. */
  readonly baseUrl: URL;
  /** The URL of the first page of `GET /pets` for a page size and status filter. */
  petsUrl(query: { limit: number; status?: string | undefined }): URL;
  /** A page of `GET /pets`: a URL from `petsUrl`, or a continuation from a Link header. */
  listPets(key: string, page: URL): Promise<PetPage>;
  createPet(key: string, pet: NewPetBody): Promise<PetModel>;
  /** The deprecated `GET /pets/{petId}`; null for a 404. */
  getPet(key: string, id: string): Promise<PetModel | null>;
  /** This client for one GraphQL request: its id goes upstream as X-Request-Id, its logger gets the lines. */
  forRequest(scope: RequestScope): RestClient;
  close(): Promise<void>;
}

export interface RequestScope {
  readonly requestId: string;
  readonly logger: Logger;
}

export type Route = 'listPets' | 'createPet' | 'getPet';

/** Told of every upstream answer, for Prometheus metrics. */
export interface UpstreamObserver {
  response(route: Route, status: number, seconds: number): void;
  failure(route: Route, seconds: number): void;
  deprecated(endpoint: string): void;
}

export interface RestClientOptions {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly limiter?: Limiter;
  /** Largest upstream body read, in bytes (default 8 MiB: 100 pets are a few KiB). */
  readonly maxBodyBytes?: number;
  /** Sockets kept to the upstream (default 32). */
  readonly connections?: number;
  readonly observer?: UpstreamObserver;
  /** Identical GETs in flight for a key are shared, and answers cached per key when configured. */
  readonly sharing?: ResponseSharing;
}

class BodyTooLargeError extends Error {}

export function createRestClient(options: RestClientOptions): RestClient {
  const baseUrl = new URL(options.baseUrl.replace(/\/?$/, '/'));
  const pool = new Pool(baseUrl.origin, {
    connections: options.connections ?? 32,
    keepAliveTimeout: 4_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connect: { timeout: options.timeoutMs },
  });
  const limiter = options.limiter ?? passThroughLimiter;
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  let warnedForeignLink = false;
  const deprecatedEndpoints = new Set<string>();

  async function attempt(
    key: string,
    route: Route,
    url: URL,
    body: string | undefined,
    signal: AbortSignal,
    requestId: string | undefined,
  ): Promise<UpstreamResponse> {
    const method = body === undefined ? 'GET' : 'POST';
    const started = performance.now();
    let response: Dispatcher.ResponseData;
    try {
      response = await pool.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method,
        headers: {
          authorization: `Bearer ${key}`,
          accept: 'application/json',
          ...(requestId === undefined ? {} : { 'x-request-id': requestId }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body,
        signal,
      });
    } catch (error) {
      options.observer?.failure(route, (performance.now() - started) / 1000);
      throw error;
    }
    options.observer?.response(route, response.statusCode, (performance.now() - started) / 1000);
    // A declared length over the cap is refused before a byte of it is read. destroy() makes undici
    // emit an abort error on the body, which nothing else listens to: without a listener it would be uncaught.
    if (Number(response.headers['content-length']) > maxBodyBytes) {
      response.body.on('error', () => {}).destroy();
      throw new BodyTooLargeError();
    }
    const text = await readCapped(response.body, maxBodyBytes);
    const result = { status: response.statusCode, headers: response.headers, body: text };
    noteDeprecation(method, url, result);
    return result;
  }

  /** Counts every deprecated answer and logs each endpoint once; GraphQL clients never see it. */
  function noteDeprecation(method: string, url: URL, response: UpstreamResponse): void {
    const deprecation = header(response, 'deprecation');
    const sunset = header(response, 'sunset');
    if (deprecation === undefined && sunset === undefined) return;
    const endpoint = `${method} ${url.pathname.replace(/\/-?\d+(?=\/|$)/g, '/{id}')}`;
    options.observer?.deprecated(endpoint);
    if (deprecatedEndpoints.has(endpoint)) return;
    deprecatedEndpoints.add(endpoint);
    options.logger.warn(
      { endpoint, deprecation, sunset },
      `the Pet Store marks ${endpoint} deprecated${sunset === undefined ? '' : `, sunset ${sunset}`}`,
    );
  }

  /**
   * One request through the limiter (GETs first through sharing: joined or cached when possible).
   * A GET whose connection was closed or reset (before or during the answer) is sent once more,
   * through the limiter again so the budget counts it; a POST never is. One timeout covers both
   * attempts, so no caller waits on the upstream longer than `timeoutMs` per request.
   */
  async function send(
    scope: RequestScope | undefined,
    key: string,
    route: Route,
    url: URL,
    body?: string,
  ): Promise<UpstreamResponse> {
    const requestId = scope?.requestId;
    const run = async () => {
      // The timeout starts with the first send, not while the limiter holds the request for budget,
      // and covers a GET's resend after a reset; a try after a 429's pause gets a timeout of its own.
      let signal: AbortSignal | undefined;
      const send = async () => {
        signal ??= AbortSignal.timeout(options.timeoutMs);
        const response = await attempt(key, route, url, body, signal, requestId);
        if (response.status === 429) signal = undefined;
        return response;
      };
      try {
        return await limiter.schedule(key, send);
      } catch (error) {
        if (body !== undefined || !isConnectionReset(error)) throw error;
        // A keep-alive socket the server closed as we sent, or a reset mid-answer: GET is idempotent (RFC 9110 section 9.2.2).
        return await limiter.schedule(key, send);
      }
    };
    try {
      if (body !== undefined || options.sharing === undefined) return await run();
      return await options.sharing.get(key, url.href, run);
    } catch (error) {
      throw toGatewayError(error, body === undefined ? 'GET' : 'POST', url, scope?.logger ?? options.logger);
    }
  }

  function toGatewayError(error: unknown, method: string, url: URL, logger: Logger): Error {
    if (error instanceof GraphQLError) return error;
    const reason =
      error instanceof BodyTooLargeError ? 'answered a body larger than allowed' : describeNetworkError(error);
    logger.warn({ method, path: url.pathname, reason }, 'upstream request failed');
    return upstreamUnavailable(`the Pet Store ${reason}`);
  }

  function fail(response: UpstreamResponse, key: string): never {
    const retryAfter = parseRetryAfter(header(response, 'retry-after'), Date.now());
    throw fromUpstreamStatus(
      response.status,
      withoutKey(toErrorBody(response.body), key),
      retryAfter === undefined ? 1 : retryAfter / 1000,
    );
  }

  function parseBody<T>(response: UpstreamResponse, shape: (value: unknown) => T | undefined): T {
    let value: unknown;
    try {
      value = parseJson(response.body);
    } catch {
      value = undefined;
    }
    const result = value === undefined ? undefined : shape(value);
    if (result === undefined)
      throw upstreamUnavailable('the Pet Store answered a body that is not the documented JSON');
    return result;
  }

  function view(scope: RequestScope | undefined): RestClient {
    return {
      baseUrl,

      petsUrl({ limit, status }) {
        const url = new URL('pets', baseUrl);
        url.searchParams.set('limit', String(limit));
        if (status !== undefined) url.searchParams.set('status', status);
        return url;
      },

      async listPets(key, url) {
        const response = await send(scope, key, 'listPets', url);
        if (response.status !== 200) fail(response, key);
        const pets = parseBody(response, toPets);
        const link = nextLink(header(response, 'link'), url, baseUrl.origin);
        const next = link !== undefined && 'url' in link && isPetsPageUrl(link.url, baseUrl) ? link.url : undefined;
        if (link !== undefined && next === undefined && !warnedForeignLink) {
          warnedForeignLink = true;
          const target = 'foreign' in link ? link.foreign : link.url.pathname;
          (scope?.logger ?? options.logger).warn(
            { target },
            'upstream linked its next page outside <base>/pets; not followed',
          );
        }
        return { pets, next };
      },

      async createPet(key, pet) {
        const body = `{"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${
          pet.status === undefined ? '' : `,"status":${JSON.stringify(pet.status)}`
        }}`;
        let response: UpstreamResponse;
        try {
          response = await send(scope, key, 'createPet', new URL('pets', baseUrl), body);
        } finally {
          // Whatever the outcome, the key's shared reads may now describe the catalogue before this write.
          options.sharing?.invalidate(key);
        }
        if (response.status !== 201 && response.status !== 200) fail(response, key);
        return parseBody(response, toPet);
      },

      async getPet(key, id) {
        const response = await send(scope, key, 'getPet', new URL(`pets/${encodeURIComponent(id)}`, baseUrl));
        if (response.status === 404) return null;
        if (response.status !== 200) fail(response, key);
        return parseBody(response, toPet);
      },

      forRequest: (requestScope) => view(requestScope),

      close: () => pool.close(),
    };
  }

  return view(undefined);
}

/**
 * The Error body with the API key cut out of its text: an upstream that echoes the Authorization
 * header in a message would otherwise hand the configured key to any client (`extensions.upstream`).
 */
function withoutKey(body: UpstreamErrorBody | undefined, key: string): UpstreamErrorBody | undefined {
  if (body === undefined || key === '') return body;
  const scrub = (text: string) => text.split(key).join('[redacted]');
  return { ...body, code: scrub(body.code), message: scrub(body.message) };
}

function header(response: UpstreamResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): unknown }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      throw new BodyTooLargeError();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const RESET_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'UND_ERR_CLOSED']);

function isConnectionReset(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code !== undefined && RESET_CODES.has(code);
}

/** A reason without URLs or credentials, fit for a client. */
function describeNetworkError(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: string; name?: string };
  if (name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return 'did not answer in time';
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'did not accept a connection in time';
  if (code === 'ECONNREFUSED') return 'refused the connection';
  if (code !== undefined && RESET_CODES.has(code)) return 'closed the connection';
  return 'could not be reached';
}
