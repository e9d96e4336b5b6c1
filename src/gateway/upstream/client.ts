/**
 * The REST client: the only user of undici. Its requests run through the stages of pipeline.ts
 * (sharing, resend on reset, the operation's budget, the limiter, a timed attempt on one keep-alive
 * Pool); this module speaks the REST interface on top: URLs, bodies parsed int64-exact, Link
 * headers, and upstream failures as UpstreamErrors (errors.ts), which the GraphQL layer maps to codes.
 */

import { createRequire } from 'node:module';
import type { Dispatcher } from 'undici';
import type { Logger } from '../observability/logger.js';
import { keyIdOf } from '../shared/key-id.js';
import { fromStatus, UpstreamError, unavailable, withOutcome } from './errors.js';
import { parseJson, toErrorBody, toPet, toPets } from './json.js';
import { parseRetryAfter } from './limits/retry-after.js';
import { isPetsPageUrl, nextLink } from './link.js';
import type { PetModel } from './models.js';
import { createOperation, type Operation } from './operation.js';
import { pipeline, type Route, type Send, type Stage, type UpstreamCall } from './pipeline.js';
import { type Generation, headerOf, type UpstreamResponse } from './response.js';
import type { ResponseSharing } from './sharing/sharing.js';
import {
  BodyTooLargeError,
  createAttempt,
  isTimeout,
  NotSentError,
  type UpstreamObserver,
  wasWritten,
} from './stages/attempt.js';
import { operationBudget } from './stages/operation-budget.js';
import { resendOnReset } from './stages/resend.js';

export type { UpstreamObserver } from './stages/attempt.js';

// The Pool alone: undici's index loads fetch, WebSocket, the cache, EventSource and the mocks too,
// 3.2 MB of heap (source text and closures) kept all the process's life for nothing we use, and
// makes its Agent the global dispatcher of Node's fetch for the whole process that embeds us.
// undici has no exports map, so the path is reachable; the suite fails at once if it moves.
const Pool: typeof import('undici').Pool = createRequire(import.meta.url)('undici/lib/dispatcher/pool.js');

export interface PetPage {
  readonly pets: PetModel[];
  /** The next page, when the upstream linked one at `<base>/pets` on our origin. */
  readonly next: URL | undefined;
  /** The upstream linked a next page that is not followed (another origin, another path). */
  readonly nextRefused?: true;
  /** Set when the page is an earlier answer served because the upstream could not be asked: its age. */
  readonly staleMs?: number;
  /** With answers kept: the key's write generation the page was asked under (what is learned from it holds while it does). */
  readonly generation?: Generation | undefined;
}

/** A pet by id (null: none), and the age of the answer when it is an earlier one served stale. */
export interface PetLookup {
  readonly pet: PetModel | null;
  readonly staleMs?: number;
}

export interface NewPetBody {
  readonly name: string;
  readonly categoryId: string;
  readonly status: string | undefined;
}

export interface RestClient {
  /** The base URL (ending in /v1/) every request is made under. */
  readonly baseUrl: URL;
  /** The URL of the first page of `GET /pets` for a page size and status filter. */
  petsUrl(query: { limit: number; status?: string | undefined }): URL;
  /** A page of `GET /pets`: a URL from `petsUrl`, or a continuation from a Link header. */
  listPets(key: string, page: URL): Promise<PetPage>;
  createPet(key: string, pet: NewPetBody): Promise<PetModel>;
  /** The deprecated `GET /pets/{petId}`; a null pet for a 404. */
  getPet(key: string, id: string): Promise<PetLookup>;
  /** This client for one GraphQL operation: its budget, deadlines, client and request id apply. */
  forOperation(operation: Operation): RestClient;
  close(): Promise<void>;
}

export interface RestClientOptions {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** Longest wait for budget of a request made outside an operation (default: the timeout). */
  readonly maxWaitMs?: number;
  readonly logger: Logger;
  /** The limiter's stage; none: each request is sent at once, and a 429 reaches the caller. */
  readonly limiter?: Stage;
  /** Largest upstream body read, in bytes (default 8 MiB: 100 pets are a few KiB). */
  readonly maxBodyBytes?: number;
  /** Sockets kept to the upstream (default 32). */
  readonly connections?: number;
  readonly observer?: UpstreamObserver;
  /** Identical GETs in flight for a key are shared, and answers cached per key when configured. */
  readonly sharing?: ResponseSharing;
  /** Remembers keys the upstream refused (first stage): a repeat costs no upstream request. */
  readonly rejectedKeys?: Stage;
  readonly now?: () => number;
  /** The tracing stage (tracing.ts), right below sharing, when tracing is on; none: no tracing work. */
  readonly tracing?: Stage;
  /**
   * Where requests go instead of a Pool of our own: the budget simulation's upstream, on a virtual
   * clock (test/simulation/). Closed with the client.
   */
  readonly dispatcher?: Dispatcher;
}

export function createRestClient(options: RestClientOptions): RestClient {
  const baseUrl = new URL(options.baseUrl.replace(/\/?$/, '/'));
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const pool: Dispatcher =
    options.dispatcher ??
    new Pool(baseUrl.origin, {
      connections: options.connections ?? 32,
      keepAliveTimeout: 4_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: { timeout: options.timeoutMs },
      maxResponseSize: maxBodyBytes,
    });
  const deprecatedEndpoints = new Set<string>();
  let warnedLink = false;

  const send: Send = pipeline(
    [
      ...(options.rejectedKeys ? [options.rejectedKeys] : []),
      ...(options.sharing ? [options.sharing.stage] : []),
      ...(options.tracing ? [options.tracing] : []),
      resendOnReset,
      operationBudget,
      ...(options.limiter ? [options.limiter] : []),
    ],
    createAttempt({
      dispatcher: pool,
      timeoutMs: options.timeoutMs,
      maxBodyBytes,
      ...(options.now ? { now: options.now } : {}),
      ...(options.observer ? { observer: options.observer } : {}),
      onResponse: noteDeprecation,
    }),
  );

  /** Counts every deprecated answer and logs each endpoint once; GraphQL clients never see it. */
  function noteDeprecation(call: UpstreamCall, response: UpstreamResponse): void {
    const deprecation = headerOf(response, 'deprecation');
    const sunset = headerOf(response, 'sunset');
    if (deprecation === undefined && sunset === undefined) return;
    const endpoint = `${isWriteMethod(call)} ${call.url.pathname.replace(/\/-?\d+(?=\/|$)/g, '/{id}')}`;
    options.observer?.deprecated(endpoint);
    if (deprecatedEndpoints.has(endpoint)) return;
    deprecatedEndpoints.add(endpoint);
    options.logger.warn(
      { endpoint, deprecation, sunset },
      `the Pet Store marks ${endpoint} deprecated${sunset === undefined ? '' : `, sunset ${sunset}`}`,
    );
  }

  async function request(
    operation: Operation,
    key: string,
    route: Route,
    url: URL,
    body?: string,
  ): Promise<UpstreamResponse> {
    const call: UpstreamCall = {
      key,
      keyId: keyIdOf(key),
      route,
      url,
      body,
      operation,
      signal: operation.signal,
      dispatched: false,
    };
    try {
      return await send(call);
    } catch (error) {
      throw toUpstreamError(error, call);
    }
  }

  /**
   * A failure as an UpstreamError; a write's says whether it may have had its effect (`outcome`).
   * The stages throw UpstreamErrors only for requests they decided not to send (no budget, a silent
   * upstream, a refused key): a write's is `not_sent`. Anything else failed in the attempt, which
   * knows whether the request was written (`wasWritten`).
   */
  function toUpstreamError(error: unknown, call: UpstreamCall): Error {
    const write = call.body !== undefined;
    if (error instanceof UpstreamError) return write ? withOutcome(error, 'not_sent') : error;
    const method = isWriteMethod(call);
    const outcome = write ? (wasWritten(error) ? 'unknown' : 'not_sent') : undefined;
    // A GET whose client has gone was dropped or cancelled by us; a POST only if it was never sent.
    if (call.signal?.aborted && (!write || outcome === 'not_sent')) {
      // Nobody waits for this answer. Not the upstream's fault, nothing to warn about.
      call.operation.logger.debug({ method, path: call.url.pathname }, 'upstream request dropped: the client left');
      return unavailable('the request was cancelled: the client closed the connection', outcome);
    }
    const reason = describeNetworkError(error);
    call.operation.logger.warn({ method, path: call.url.pathname, reason, outcome }, 'upstream request failed');
    return unavailable(`the Pet Store ${reason}`, outcome);
  }

  function fail(response: UpstreamResponse, key: string): never {
    const retryAfter = parseRetryAfter(headerOf(response, 'retry-after', 'first'), Date.now());
    throw fromStatus(
      response.status,
      toErrorBody(response.body, key),
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
    if (result === undefined) throw unavailable('the Pet Store answered a body that is not the documented JSON');
    return result;
  }

  function view(bound: Operation | undefined): RestClient {
    // Outside a GraphQL operation (tools, tests): each request is an operation of its own.
    const operationFor = () =>
      bound ??
      createOperation({
        logger: options.logger,
        maxWaitMs: options.maxWaitMs ?? options.timeoutMs,
        timeoutMs: options.timeoutMs,
        ...(options.now ? { now: options.now() } : {}),
      });
    return {
      baseUrl,

      petsUrl({ limit, status }) {
        // Written out and parsed once: each `searchParams.set` would serialise the URL again.
        const query = status === undefined ? '' : `&status=${encodeURIComponent(status)}`;
        return new URL(`pets?limit=${limit}${query}`, baseUrl);
      },

      async listPets(key, url) {
        const operation = operationFor();
        const response = await request(operation, key, 'listPets', url);
        if (response.status !== 200) fail(response, key);
        const pets = parseBody(response, toPets);
        const link = nextLink(headerOf(response, 'link'), url, baseUrl.origin);
        const next = link !== undefined && 'url' in link && isPetsPageUrl(link.url, baseUrl) ? link.url : undefined;
        if (link !== undefined && next === undefined && !warnedLink) {
          warnedLink = true;
          const target = 'foreign' in link ? link.foreign : link.url.pathname;
          operation.logger.warn({ target }, 'upstream linked its next page outside <base>/pets; not followed');
        }
        const stale = response.staleMs === undefined ? {} : { staleMs: response.staleMs };
        const { generation } = response;
        return link !== undefined && next === undefined
          ? { pets, next, nextRefused: true, generation, ...stale }
          : { pets, next, generation, ...stale };
      },

      async createPet(key, pet) {
        const operation = operationFor();
        const body = `{"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${
          pet.status === undefined ? '' : `,"status":${JSON.stringify(pet.status)}`
        }}`;
        const response = await request(operation, key, 'createPet', new URL('pets', baseUrl), body);
        if (operation.signal?.aborted) {
          // Sent before its client left: finished all the same, and what became of it is on record.
          operation.logger.info({ status: response.status }, 'createPet answered after its client left');
        }
        try {
          if (response.status !== 201 && response.status !== 200) fail(response, key);
          return parseBody(response, toPet);
        } catch (error) {
          // It was received and answered, but not with a created pet. A 5xx is an answer, yet not a
          // statement that nothing was created: the spec says nothing of it, a gateway's 502/504
          // may stand for a store that did create, a 500 may come after the insert. Nor is a
          // success whose body cannot be read. So the pet may exist, as after a timeout. (A 4xx
          // says the request itself was refused: a REFUSED error, no outcome.)
          throw error instanceof UpstreamError ? withOutcome(error, 'unknown') : error;
        }
      },

      async getPet(key, id) {
        const response = await request(
          operationFor(),
          key,
          'getPet',
          new URL(`pets/${encodeURIComponent(id)}`, baseUrl),
        );
        if (response.status === 404) return { pet: null };
        if (response.status !== 200) fail(response, key);
        const pet = parseBody(response, toPet);
        return response.staleMs === undefined ? { pet } : { pet, staleMs: response.staleMs };
      },

      forOperation: (operation) => view(operation),

      close: () => pool.close(),
    };
  }

  return view(undefined);
}

function isWriteMethod(call: UpstreamCall): 'GET' | 'POST' {
  return call.body === undefined ? 'GET' : 'POST';
}

/** A reason without URLs or credentials, fit for a client. */
function describeNetworkError(error: unknown): string {
  const { code } = (error ?? {}) as { code?: string };
  if (error instanceof NotSentError) return 'was not asked: too little time was left to wait for its answer';
  if (error instanceof BodyTooLargeError || code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return 'answered a body larger than allowed';
  }
  if (isTimeout(error)) return 'did not answer in time';
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'did not accept a connection in time';
  if (code === 'ECONNREFUSED') return 'refused the connection';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE' || code === 'UND_ERR_CLOSED') {
    return 'closed the connection';
  }
  return 'could not be reached';
}
