/**
 * Tiny node:http upstreams for gateway tests (an API that follows the spec differently from the
 * reference store, or one that fails in a given way), and a gateway in front of any base URL.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Config, parseConfig } from '../../src/config.js';
import { createGateway, type GatewayHandle } from '../../src/gateway/server.js';
import { type GqlOptions, type GqlResponse, gql } from './gql.js';

/** One request an upstream received, as it arrived. */
export interface RecordedRequest {
  readonly method: string;
  /** Path and query, exactly as sent. */
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: string;
}

export interface Upstream {
  /** http://127.0.0.1:port */
  readonly origin: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** An HTTP server on 127.0.0.1, port 0, that records every request and hands it to `handler`. */
export async function startUpstream(handler: UpstreamHandler): Promise<Upstream> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Sends `body` (a string written by hand, so int64 numbers stay exact) with a status. */
export function sendRaw(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): void {
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** A base URL (ending in /v1) on which nothing listens: the port was free a moment ago. */
export async function refusedBaseUrl(): Promise<string> {
  const upstream = await startUpstream(() => {});
  await upstream.close();
  return `${upstream.origin}/v1`;
}

export interface GatewayUnderTest {
  readonly gateway: GatewayHandle;
  readonly config: Config;
  query<T = Record<string, any>>(query: string, options?: GqlOptions): Promise<GqlResponse<T>>;
  close(): Promise<void>;
}

export const UPSTREAM_KEY = 'upstream-test-key';

/** A gateway on port 0 in front of `baseUrl`, with UPSTREAM_KEY configured, no throttling and no logs. */
export async function startGateway(baseUrl: string, env: Record<string, string> = {}): Promise<GatewayUnderTest> {
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: baseUrl,
    PETSTORE_API_KEY: UPSTREAM_KEY,
    PETSTORE_RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const gateway = await createGateway(config, { host: '127.0.0.1' });
  return {
    gateway,
    config,
    query: (query, options) => gql(gateway.url, query, options),
    close: () => gateway.close(),
  };
}
