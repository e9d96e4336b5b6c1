/**
 * The HTTP edge: /graphql (Apollo Server through its integration API), /health (liveness), /ready
 * (readiness), /metrics, the landing page's files, and CORS for the allowed origins. No framework:
 * Node's http and `executeHTTPGraphQLRequest` are all an integration needs.
 */

import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type ApolloServer,
  type BaseContext,
  HeaderMap,
  type HTTPGraphQLRequest,
  type HTTPGraphQLResponse,
} from '@apollo/server';
import { discardBody } from '../../discard-body.js';
import type { GatewayContext } from '../graphql/context.js';
import type { Logger } from '../observability/logger.js';
import type { OperationTrace, Tracing } from '../observability/tracing.js';
import { Cancellation, type CancelSignal } from '../shared/cancel.js';
import { type CorsVerdict, createCors } from './cors.js';
import { requestIdFrom } from './request-id.js';
import type { SharedExecutions } from './shared-executions.js';
import type { TrustedDocuments } from './trusted-documents/door.js';

/** Generic in the context so that Apollo's integration test suite can serve its own servers through this edge. */
export interface HttpOptions<TContext extends BaseContext = GatewayContext> {
  readonly apollo: ApolloServer<TContext>;
  /**
   * `query` is the operation's text, when the request carries one; `requestId` its X-Request-Id;
   * `signal` is aborted if the client goes before its answer is written; `trace` is the request's
   * span, when tracing is on.
   */
  readonly context: (
    req: IncomingMessage,
    query: string | undefined,
    requestId: string,
    signal: CancelSignal,
    trace: OperationTrace | undefined,
  ) => Promise<TContext>;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
  /** Gets server faults at error level, client faults (a body cut short) at info, without a stack. */
  readonly logger: Pick<Logger, 'error' | 'info'>;
  /** Serves `/metrics` (Prometheus text format), behind a bearer token when one is given. */
  readonly metrics?: { readonly contentType: string; metrics(): Promise<string>; readonly token?: string | undefined };
  /** Which browser origins may call (default: any). */
  readonly cors?: (req: IncomingMessage, res: ServerResponse) => CorsVerdict;
  /** Whether the gateway can serve (`/ready`); and told of every response, so shutdown can wait for them. */
  readonly lifecycle?: {
    readonly ready: () => boolean;
    readonly track: (res: ServerResponse) => void;
    /** More for the /ready body (which Redis, whether reachable); never secrets, never a key. */
    readonly details?: () => Readonly<Record<string, unknown>>;
  };
  /** Identical queries in flight for one key share one execution (PETSTORE_COALESCE). */
  readonly executions?: SharedExecutions | undefined;
  /** Serves the landing page's own files (GraphiQL's); returns false for a path that is not one. */
  readonly serveAsset?: ((req: IncomingMessage, res: ServerResponse, pathname: string) => boolean) | undefined;
  /** Headers for the landing page's HTML (its Content-Security-Policy, X-Frame-Options). */
  readonly pageHeaders?: (() => Readonly<Record<string, string>>) | undefined;
  /** A span per GraphQL request (OpenTelemetry); none: no tracing work at all. */
  readonly tracing?: Tracing | undefined;
  /** Persisted documents resolved, and unlisted ones refused, before Apollo Server reads the request. */
  readonly trustedDocuments?: TrustedDocuments | undefined;
}

export function createHttpHandler<TContext extends BaseContext = GatewayContext>(
  options: HttpOptions<TContext>,
): (req: IncomingMessage, res: ServerResponse) => void {
  const cors = options.cors ?? createCors({ origins: '*' });
  return (req, res) => {
    options.lifecycle?.track(res);
    const requestId = requestIdFrom(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    // No answer of the gateway's is anything but its declared type (JSON, HTML, the page's files).
    res.setHeader('X-Content-Type-Options', 'nosniff');
    handle(req, res, requestId).catch((error: unknown) => {
      if (isClientFault(error, res)) {
        options.logger.info({ reqId: requestId, reason: describe(error) }, 'client went away');
        return;
      }
      options.logger.error({ reqId: requestId, err: error }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
      else res.destroy();
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const url = requestTarget(req.url);
    if (url.pathname === '/health') return sendJson(res, 200, { status: 'ok' });
    if (url.pathname === '/ready') {
      const ready = options.lifecycle?.ready() ?? true;
      const details = options.lifecycle?.details?.() ?? {};
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable', ...details });
    }
    if (url.pathname === '/metrics' && options.metrics) return serveMetrics(req, res, options.metrics);
    if (options.serveAsset?.(req, res, url.pathname)) return;
    if (url.pathname === '/favicon.ico') {
      // Browsers ask for it beside every page (GraphiQL's links none): nothing to show, and no
      // 404 to fill their console and the access log. A day's caching keeps them from asking again.
      res.writeHead(204, { 'Cache-Control': 'public, max-age=86400' }).end();
      return;
    }
    if (url.pathname !== '/graphql' && url.pathname !== '/graphql/') {
      return sendJson(res, 404, { errors: [{ message: 'Not found: GraphQL is served at /graphql' }] });
    }
    if (cors(req, res) === 'refused') {
      // Refused before the body is read: a page of another origin never reaches the upstream.
      res.setHeader('Connection', 'close');
      return sendJson(res, 403, {
        errors: [{ message: 'this origin may not call the gateway (CORS_ORIGINS)', extensions: { code: 'FORBIDDEN' } }],
      });
    }
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.end();
      return;
    }
    if (options.lifecycle !== undefined && !options.lifecycle.ready()) {
      res.setHeader('Retry-After', '1');
      return sendJson(res, 503, {
        errors: [{ message: 'the gateway is starting or shutting down', extensions: { code: 'UNAVAILABLE' } }],
      });
    }
    if (options.tracing === undefined) return serveGraphql(req, res, url, requestId, undefined);
    const trace = options.tracing.start(req.headers, requestId);
    try {
      await serveGraphql(req, res, url, requestId, trace);
    } catch (error) {
      trace.conclude({ code: isClientFault(error, res) ? 'CLIENT_GONE' : 'INTERNAL_SERVER_ERROR' });
      throw error;
    } finally {
      trace.end(res.statusCode);
    }
  }

  async function serveGraphql(
    req: IncomingMessage,
    res: ServerResponse,
    url: RequestTarget,
    requestId: string,
    trace: OperationTrace | undefined,
  ): Promise<void> {
    const body = await readJsonBody(req, options.maxBodyBytes);
    if (body.aborted) {
      options.logger.info({ reqId: requestId }, 'client went away before its request was read');
      trace?.conclude({ code: 'CLIENT_GONE' });
      return;
    }
    if (body.error !== undefined) {
      if (body.status === 413) res.setHeader('Connection', 'close');
      trace?.conclude({ code: 'BAD_REQUEST' });
      return sendJson(res, body.status, { errors: [{ message: body.error, extensions: { code: 'BAD_REQUEST' } }] });
    }
    let { value, text } = body;
    let target = url;
    if (options.trustedDocuments !== undefined) {
      const admitted = options.trustedDocuments.admit(req.method, value, text, url.search);
      if (admitted.refused !== undefined) {
        trace?.conclude({ code: admitted.refused.code });
        // As Apollo Router answers these: the list may gain the id with the next deploy, so no cache keeps the refusal.
        res.setHeader('Cache-Control', 'private, no-cache, must-revalidate');
        return sendJson(res, admitted.status, admitted.answer);
      }
      value = admitted.body;
      text = admitted.text;
      if (admitted.search !== url.search) target = { pathname: url.pathname, search: admitted.search };
    }
    const execute = (signal: CancelSignal) => {
      const headers = new HeaderMap();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const request: HTTPGraphQLRequest = {
        method: req.method ?? 'GET',
        headers,
        search: target.search,
        body: value,
      };
      return options.apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: request,
        context: () => options.context(req, queryText(value, target), requestId, signal, trace),
      });
    };
    // The client leaving cancels what its operation still has queued or in flight upstream. A
    // response emits 'close' once, and leaving twice would change nothing: on(), not once().
    const whenGone = (leave: (reason: unknown) => void): void => {
      res.on('close', () => {
        if (!res.writableFinished) leave(new DOMException('the client closed the connection', 'AbortError'));
      });
    };
    const executions = text === undefined ? undefined : options.executions;
    const shared = executions?.keyOf(req.headers, text as string, value);
    let response: HTTPGraphQLResponse;
    if (executions !== undefined && shared !== undefined) {
      response = await executions.answer(shared, whenGone, execute, trace);
    } else {
      const gone = new Cancellation();
      whenGone((reason) => gone.abort(reason));
      response = await execute(gone);
    }
    for (const [name, value] of response.headers) res.setHeader(name, value);
    // Apollo Server answers a browser's GET with the landing page (and nothing else with HTML).
    if (req.method === 'GET' && options.pageHeaders && response.headers.get('content-type')?.startsWith('text/html')) {
      for (const [name, value] of Object.entries(options.pageHeaders())) res.setHeader(name, value);
    }
    res.statusCode = response.status ?? 200;
    trace?.answered(res.statusCode, response.body.kind === 'complete' ? response.body.string : undefined);
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  }
}

/**
 * Answers while the gateway is still starting (Redis, Apollo): alive at /health, not ready at /ready,
 * and 503 with Retry-After for anything else, so a probe or an early client is answered, not held.
 */
export function answerWhileStarting(req: IncomingMessage, res: ServerResponse): void {
  const { pathname } = new URL(req.url ?? '/', 'http://gateway.invalid');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (pathname === '/health') return sendJson(res, 200, { status: 'ok' });
  res.setHeader('Retry-After', '1');
  if (pathname === '/ready') return sendJson(res, 503, { status: 'unavailable' });
  sendJson(res, 503, {
    errors: [{ message: 'the gateway is starting or shutting down', extensions: { code: 'UNAVAILABLE' } }],
  });
}

interface RequestTarget {
  readonly pathname: string;
  /** The query part, `?` included, or ''. */
  readonly search: string;
}

/**
 * The path and query of a request target. The URL parser is a measurable share of a request's CPU,
 * so the target every GraphQL POST has, `/graphql` with or without a query, is split by hand; any
 * other goes through the parser, which normalises it (dot segments, percent-encoding).
 */
function requestTarget(target: string | undefined): RequestTarget {
  if (target === '/graphql') return { pathname: target, search: '' };
  if (target?.startsWith('/graphql?') && !target.includes('#')) {
    return { pathname: '/graphql', search: target.slice('/graphql'.length) };
  }
  const { pathname, search } = new URL(target ?? '/', 'http://gateway.invalid');
  return { pathname, search };
}

function queryText(body: unknown, url: RequestTarget): string | undefined {
  const query =
    typeof body === 'object' && body !== null
      ? (body as { query?: unknown }).query
      : new URLSearchParams(url.search).get('query');
  return typeof query === 'string' ? query : undefined;
}

async function serveMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: NonNullable<HttpOptions['metrics']>,
): Promise<void> {
  if (metrics.token !== undefined && !bearerIs(req.headers.authorization, metrics.token)) {
    res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
    return sendJson(res, 401, { error: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
  }
  const text = await metrics.metrics();
  res.setHeader('Content-Type', metrics.contentType);
  res.end(text);
}

/** Compares in constant time, so the token cannot be guessed a character at a time. */
function bearerIs(header: string | undefined, token: string): boolean {
  const given = Buffer.from(/^Bearer +(.+)$/i.exec(header ?? '')?.[1]?.trim() ?? '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const CLIENT_FAULTS = new Set(['ECONNRESET', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_STREAM_DESTROYED']);

/** A fault of the client's (it went away): nothing for an operator to fix. */
function isClientFault(error: unknown, res: ServerResponse): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return (code !== undefined && CLIENT_FAULTS.has(code)) || res.destroyed;
}

function describe(error: unknown): string {
  return (error as { code?: string } | undefined)?.code ?? (error as Error | undefined)?.message ?? 'unknown';
}

type BodyResult =
  | { value: unknown; text?: string; error?: undefined; aborted?: undefined }
  | { error: string; status: number; aborted?: undefined }
  | { aborted: true; error?: undefined };

/** Reads a POST body; JSON is parsed when the Content-Type says so, as Apollo Server expects. */
async function readJsonBody(req: IncomingMessage, max: number): Promise<BodyResult> {
  if (req.method !== 'POST') return { value: undefined };
  const { headers } = req;
  if (Number(headers['content-length']) > max) return tooLarge(req, max);
  const chunks: Buffer[] = [];
  let size = 0;
  // Plain listeners, not once(): the first event to settle the promise wins, the request is dropped
  // after its answer, and once() costs a bound wrapper each (it showed in the profile with sharing on).
  const outcome = await new Promise<'read' | 'too large' | 'aborted'>((resolve) => {
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      resolve('too large');
    };
    req.on('data', onData);
    req.on('end', () => resolve('read'));
    // A client gone before the end of its body (or a request timeout): nothing to answer, only to stop waiting.
    req.on('error', () => resolve('aborted'));
    req.on('close', () => resolve(req.complete ? 'read' : 'aborted'));
  });
  if (outcome === 'aborted') return { aborted: true };
  if (outcome === 'too large') return tooLarge(req, max);
  // A body in one chunk (nearly all) is decoded as it is; a split one whole, so a character cut in two is read right.
  const text =
    chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
  if (!isJsonType(headers['content-type'])) return { value: text };
  try {
    return { value: text === '' ? undefined : JSON.parse(text), text };
  } catch {
    // "Invalid JSON" is what Apollo's own integrations answer, and what its test suite looks for.
    return { error: 'Invalid JSON body', status: 400 };
  }
}

/** A 413, once the rest of the body has been read and dropped, so the answer is not lost to a TCP reset. */
async function tooLarge(req: IncomingMessage, max: number): Promise<BodyResult> {
  await discardBody(req);
  return { error: `body larger than ${max} bytes`, status: 413 };
}

/** Whether a Content-Type names JSON (`application/json` or a `+json` type), parameters aside. */
function isJsonType(contentType: string | undefined): boolean {
  if (contentType === 'application/json') return true;
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' || type?.endsWith('+json') === true;
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
