/**
 * Which web pages may call the gateway from a browser (the Fetch standard's CORS protocol). With a
 * server key configured, a request without `Authorization` spends that key, so an arbitrary page
 * must not be able to send one and read the answer: only the configured origins (by default Apollo
 * Sandbox's) and same-origin pages on a loopback name (the gateway's own GraphiQL) may. A request that is
 * not allowed is refused before its body is read, so it never reaches the upstream. Requests
 * without an Origin header (curl, servers, routers) are not browsers' and pass.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';

/** The request headers the gateway reads; a preflight allows these and no others. */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'apollo-require-preflight',
  'x-apollo-operation-name',
  'apollographql-client-name',
  'apollographql-client-version',
  'x-request-id',
  'traceparent',
  'tracestate',
];

export interface CorsOptions {
  /** Allowed origins, or '*' for any. */
  readonly origins: readonly string[] | '*';
  /** A header that names the client (CLIENT_ID_HEADER), allowed in a preflight too. */
  readonly extraHeaders?: readonly string[];
}

export type CorsVerdict = 'allowed' | 'refused';

export function createCors(options: CorsOptions): (req: IncomingMessage, res: ServerResponse) => CorsVerdict {
  const allowed = options.origins === '*' ? undefined : new Set(options.origins.map((origin) => origin.toLowerCase()));
  const allowHeaders = [...ALLOWED_HEADERS, ...(options.extraHeaders ?? []).map((name) => name.toLowerCase())].join(
    ', ',
  );
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined || isSameOrigin(origin, req)) return 'allowed';
    res.setHeader('Vary', 'Origin');
    if (allowed !== undefined && !allowed.has(origin.toLowerCase())) return 'refused';
    res.setHeader('Access-Control-Allow-Origin', allowed === undefined ? '*' : origin);
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', allowHeaders);
      res.setHeader('Access-Control-Max-Age', '600');
    }
    return 'allowed';
  };
}

/**
 * Whether `origin` is the gateway's own page (its GraphiQL), reached on a loopback name. Only
 * loopback names: a page whose name an attacker controls can be made to resolve to the gateway
 * (DNS rebinding) and would then look same-origin by its Host header. A gateway served under a
 * public name lists that origin in CORS_ORIGINS.
 */
function isSameOrigin(origin: string, req: IncomingMessage): boolean {
  const host = req.headers.host?.toLowerCase();
  if (host === undefined) return false;
  try {
    const url = new URL(origin);
    if (url.host !== host || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
    return url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  } catch {
    return false;
  }
}
