/**
 * The HTTP edge: /graphql (Apollo Server through its integration API), /health, and CORS so that
 * Apollo Sandbox, served from Apollo's origin, can call the endpoint. No framework: Node's http
 * and `executeHTTPGraphQLRequest` are all an integration needs.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ApolloServer, type BaseContext, HeaderMap, type HTTPGraphQLRequest } from '@apollo/server';
import type { GatewayContext } from './context.js';
import { requestIdFrom } from './request-context.js';

/** Generic in the context so that Apollo's integration test suite can serve its own servers through this edge. */
export interface HttpOptions<TContext extends BaseContext = GatewayContext> {
  readonly apollo: ApolloServer<TContext>;
  /**
   * `query` is the operation's text, when the request carries one; `requestId` its X-Request-Id;
   * `signal` is aborted if the client goes before its answer is written.
   */
  readonly context: (
    req: IncomingMessage,
    query: string | undefined,
    requestId: string,
    signal: AbortSignal,
  ) => Promise<TContext>;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
  readonly onError: (error: unknown) => void;
  /** Serves `/metrics` (Prometheus text format). */
  readonly metrics?: { readonly contentType: string; metrics(): Promise<string> };
  /** Serves the landing page's own files (GraphiQL's); returns false for a path that is not one. */
  readonly serveAsset?: ((req: IncomingMessage, res: ServerResponse, pathname: string) => boolean) | undefined;
}

export function createHttpHandler<TContext extends BaseContext = GatewayContext>(
  options: HttpOptions<TContext>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = requestIdFrom(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    handle(req, res, requestId).catch((error: unknown) => {
      options.onError(error);
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
      else res.destroy();
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://gateway.invalid');
    if (url.pathname === '/health') return sendJson(res, 200, { status: 'ok' });
    if (url.pathname === '/metrics' && options.metrics) {
      const text = await options.metrics.metrics();
      res.setHeader('Content-Type', options.metrics.contentType);
      res.end(text);
      return;
    }
    if (options.serveAsset?.(req, res, url.pathname)) return;
    if (url.pathname !== '/graphql' && url.pathname !== '/graphql/') {
      return sendJson(res, 404, { errors: [{ message: 'Not found: GraphQL is served at /graphql' }] });
    }
    setCors(req, res);
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.end();
      return;
    }

    const body = await readJsonBody(req, options.maxBodyBytes);
    if (body.error !== undefined) {
      if (body.status === 413) res.setHeader('Connection', 'close');
      return sendJson(res, body.status, { errors: [{ message: body.error, extensions: { code: 'BAD_REQUEST' } }] });
    }
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const request: HTTPGraphQLRequest = { method: req.method ?? 'GET', headers, search: url.search, body: body.value };
    // The client leaving cancels what its operation still has queued or in flight upstream.
    const gone = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) gone.abort(new DOMException('the client closed the connection', 'AbortError'));
    };
    res.once('close', onClose);
    const response = await options.apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: request,
      context: () => options.context(req, queryText(body.value, url), requestId, gone.signal),
    });
    for (const [name, value] of response.headers) res.setHeader(name, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  }
}

function queryText(body: unknown, url: URL): string | undefined {
  const query =
    typeof body === 'object' && body !== null ? (body as { query?: unknown }).query : url.searchParams.get('query');
  return typeof query === 'string' ? query : undefined;
}

function setCors(req: IncomingMessage, res: ServerResponse): void {
  // Credentials travel in the Authorization header, never in cookies, so any origin may call.
  res.setHeader('Access-Control-Allow-Origin', '*');
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? 'content-type');
    res.setHeader('Access-Control-Max-Age', '600');
  }
}

type BodyResult = { value: unknown; error?: undefined } | { error: string; status: number };

/** Reads a POST body; JSON is parsed when the Content-Type says so, as Apollo Server expects. */
async function readJsonBody(req: IncomingMessage, max: number): Promise<BodyResult> {
  if (req.method !== 'POST') return { value: undefined };
  if (Number(req.headers['content-length']) > max) return { error: `body larger than ${max} bytes`, status: 413 };
  const chunks: Buffer[] = [];
  const tooLarge = await new Promise<boolean>((resolve, reject) => {
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      resolve(true);
    };
    req.on('data', onData);
    req.once('end', () => resolve(false));
    req.once('error', reject);
    // A client gone before the end of its body: nothing to answer, only to stop waiting.
    req.once('close', () => resolve(true));
  });
  if (tooLarge) return { error: `body larger than ${max} bytes`, status: 413 };
  const text = Buffer.concat(chunks).toString('utf8');
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json' && !type?.endsWith('+json')) return { value: text };
  try {
    return { value: text === '' ? undefined : JSON.parse(text) };
  } catch {
    // "Invalid JSON" is what Apollo's own integrations answer, and what its test suite looks for.
    return { error: 'Invalid JSON body', status: 400 };
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
