/**
 * The reference Pet Store's request handler (no listening here): routes, bearer keys, rate limits
 * and the ban, pagination, the deprecated single-pet endpoint, and an Error body for every failure.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { discardBody } from '../discard-body.js';
import { parseInt64 } from '../int64.js';
import { parseNewPet } from './new-pet.js';
import type { KeySpec } from './plans.js';
import { type Admission, type Quota, RateLimiter, type RateLimitOptions } from './rate-limit.js';
import { errorCodeOf, petJson, petsJson, sendError, sendJson } from './responses.js';
import { PET_STATUSES, type PetCatalogue, type PetStatus } from './store.js';

export type Operation = 'listPets' | 'createPet' | 'getPet';

export interface PetstoreAppOptions extends RateLimitOptions {
  readonly keys: ReadonlyMap<string, KeySpec>;
  readonly catalogue: PetCatalogue;
  /** Milliseconds since the epoch; injectable so tests can run an hour of windows in seconds. */
  readonly now: () => number;
  /** Largest request body accepted, in bytes (default 16 KiB). */
  readonly maxBodyBytes: number;
  /** Added before each answer, as a distant or busy store would be (tests of overlapping requests). */
  readonly responseDelayMs?: number | undefined;
  /** How 429s write Retry-After (the spec leaves it open; default delay-seconds). */
  readonly retryAfter?: 'delay-seconds' | 'http-date' | undefined;
  /** Called once per request that reached an operation, after the response status is known. */
  readonly onRequest?: ((record: RequestRecord) => void) | undefined;
}

/** One request as the store saw it: which operation, for which key, with what status. */
export interface RequestRecord {
  readonly operation: Operation;
  readonly method: string;
  readonly key: string | undefined;
  readonly status: number;
  /** The Error body's code, for an error. */
  readonly code: string | undefined;
  /** When the store received it (its clock). */
  readonly receivedAt: number;
  /** The X-Request-Id it carried. */
  readonly requestId: string | undefined;
  /** The W3C `traceparent` it carried (the gateway sends one when tracing is on). */
  readonly traceparent: string | undefined;
}

/** RFC 9745 Deprecation (an IMF-fixdate-free `@epoch`), and RFC 8594 Sunset, for GET /pets/{petId}. */
export const GET_PET_DEPRECATION = '@1735689600';
export const GET_PET_SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

export function createPetstoreApp(options: PetstoreAppOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const limiter = new RateLimiter(options);

  return (req, res) => {
    handle(req, res).catch(() => {
      // Nothing a client sends should get here; if it does, answer rather than hang or crash.
      if (!res.headersSent) sendError(res, 500, 'internal_error', 'internal error');
      else res.destroy();
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://store.invalid');
    const route = matchRoute(url.pathname);
    if (route === undefined) return sendError(res, 404, 'not_found', 'no such resource');
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? '');
    const operation = route.operations[method];
    if (operation === undefined) {
      res.setHeader('Allow', Object.keys(route.operations).join(', ').replace('GET', 'GET, HEAD'));
      return sendError(res, 405, 'method_not_allowed', `${req.method} is not allowed here`);
    }
    if (operation === 'getPet') {
      res.setHeader('Deprecation', GET_PET_DEPRECATION);
      res.setHeader('Sunset', GET_PET_SUNSET);
      res.setHeader('Link', '</v1/pets>; rel="successor-version"');
    }

    const key = bearerKey(req.headers.authorization);
    const receivedAt = options.now();
    res.on('finish', () =>
      options.onRequest?.({
        operation,
        method: req.method ?? '',
        key,
        status: res.statusCode,
        code: errorCodeOf(res),
        receivedAt,
        requestId: req.headers['x-request-id'] as string | undefined,
        traceparent: req.headers.traceparent as string | undefined,
      }),
    );
    if (options.responseDelayMs) await new Promise((resolve) => setTimeout(resolve, options.responseDelayMs));
    const spec = key === undefined ? undefined : options.keys.get(key);
    if (spec === undefined) {
      // RFC 6750 section 3: a bearer challenge on every 401.
      res.setHeader('WWW-Authenticate', 'Bearer realm="petstore"');
      const message = key === undefined ? 'missing bearer API key' : 'invalid API key';
      return sendError(res, 401, 'unauthorized', message);
    }

    const admission = limiter.admit(key as string, spec.limits, options.now());
    setQuotaHeaders(res, admission.quota);
    if (!admission.allowed) return refuse(res, admission);

    switch (operation) {
      case 'listPets':
        return listPets(req, res, url);
      case 'createPet':
        return createPet(req, res);
      case 'getPet':
        return getPet(res, route.petId as string);
    }
  }

  function refuse(res: ServerResponse, admission: Extract<Admission, { allowed: false }>): void {
    // RFC 9110 section 10.2.3: delay-seconds rounded up so a client never comes back early, or an HTTP-date.
    const seconds = Math.max(1, Math.ceil((admission.retryAt - options.now()) / 1000));
    const at = new Date(Math.ceil(admission.retryAt / 1000) * 1000);
    res.setHeader('Retry-After', options.retryAfter === 'http-date' ? at.toUTCString() : String(seconds));
    if (admission.banned) {
      sendError(
        res,
        429,
        'key_banned',
        `API key is temporarily banned for repeated requests after 429; retry after ${seconds} s`,
      );
    } else {
      sendError(res, 429, 'rate_limited', `rate limit exceeded; retry after ${seconds} s`);
    }
  }

  function listPets(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const query = parseListQuery(url.searchParams);
    if (typeof query === 'string') return sendError(res, 400, 'invalid_request', query);
    const page = options.catalogue.page(query);
    const last = page.pets.at(-1);
    if (page.hasMore && last !== undefined) {
      const next = new URLSearchParams({ limit: String(query.limit) });
      if (query.status !== undefined) next.set('status', query.status);
      next.set('after', String(last.id));
      // RFC 8288 web linking; absolute, on the origin the client used.
      res.setHeader('Link', `<${origin(req)}/v1/pets?${next}>; rel="next"`);
    }
    sendJson(res, 200, petsJson(page.pets));
  }

  async function createPet(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, options.maxBodyBytes);
    if (body === 'too-large') {
      res.setHeader('Connection', 'close');
      return sendError(res, 413, 'payload_too_large', `body is larger than ${options.maxBodyBytes} bytes`);
    }
    if (body === undefined) return; // the client went away mid-body
    const parsed = parseNewPet(body);
    if (!parsed.ok) return sendError(res, 400, 'invalid_request', parsed.message);
    const pet = options.catalogue.add(parsed.pet);
    res.setHeader('Location', `/v1/pets/${pet.id}`);
    sendJson(res, 201, petJson(pet));
  }

  function getPet(res: ServerResponse, rawId: string): void {
    const id = parseInt64(rawId);
    if (id === undefined) return sendError(res, 400, 'invalid_request', 'petId must be an int64 integer');
    const pet = options.catalogue.get(id);
    if (pet === undefined) return sendError(res, 404, 'not_found', `pet ${id} does not exist`);
    sendJson(res, 200, petJson(pet));
  }
}

interface Route {
  readonly operations: Readonly<Record<string, Operation>>;
  readonly petId?: string;
}

function matchRoute(pathname: string): Route | undefined {
  if (pathname === '/v1/pets') return { operations: { GET: 'listPets', POST: 'createPet' } };
  const match = /^\/v1\/pets\/([^/]+)$/.exec(pathname);
  if (match) return { operations: { GET: 'getPet' }, petId: match[1] as string };
  return undefined;
}

/** The bearer credential of an Authorization header; the scheme is case-insensitive (RFC 9110 section 11.1). */
function bearerKey(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

function setQuotaHeaders(res: ServerResponse, quota: Quota): void {
  res.setHeader('X-RateLimit-Limit', String(quota.limit));
  res.setHeader('X-RateLimit-Remaining', String(quota.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil(quota.resetAt / 1000)));
}

type ListQuery = { limit: number; status: PetStatus | undefined; after: bigint | undefined };

/** GET /pets's query, or a message for a 400 (docs/rest-interface.md: out of range, non-integer, unknown status). */
function parseListQuery(params: URLSearchParams): ListQuery | string {
  for (const name of ['limit', 'status', 'after']) {
    if (params.getAll(name).length > 1) return `${name} may be given once`;
  }
  const rawLimit = params.get('limit');
  const limit = rawLimit === null ? DEFAULT_LIMIT : /^[0-9]{1,4}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) return `limit must be an integer from 1 to ${MAX_LIMIT}`;

  const rawStatus = params.get('status');
  if (rawStatus !== null && !PET_STATUSES.includes(rawStatus as PetStatus)) {
    return `status must be one of ${PET_STATUSES.join(', ')}`;
  }
  const rawAfter = params.get('after');
  const after = rawAfter === null ? undefined : parseInt64(rawAfter);
  if (rawAfter !== null && after === undefined) return 'after must be an int64 pet id';
  return { limit, status: (rawStatus ?? undefined) as PetStatus | undefined, after };
}

/** The origin the client addressed, for absolute Link URLs; a Host header that is not a plain host[:port] is ignored. */
function origin(req: IncomingMessage): string {
  const host = req.headers.host;
  const local = `${req.socket.localAddress?.includes(':') ? `[${req.socket.localAddress}]` : req.socket.localAddress}:${req.socket.localPort}`;
  return `http://${host !== undefined && /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/.test(host) ? host : local}`;
}

/**
 * Reads a body of at most `max` bytes as UTF-8; 'too-large' past that, once the rest has been read
 * and dropped (src/discard-body.ts: so the 413 reaches the client), undefined if the client aborted.
 */
async function readBody(req: IncomingMessage, max: number): Promise<string | 'too-large' | undefined> {
  const declared = Number(req.headers['content-length']);
  if (declared > max) {
    await discardBody(req);
    return 'too-large';
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      void discardBody(req).then(() => resolve('too-large'));
    };
    req.on('data', onData);
    req.on('end', () => {
      if (size <= max) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('aborted', () => resolve(undefined));
    req.on('error', () => resolve(undefined));
  });
}
