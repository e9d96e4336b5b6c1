/**
 * A recording HTTP forwarding proxy (node:http) in front of one server: it writes down the method,
 * path and headers of every request that passes, then forwards request and response unchanged. It
 * lets a test see what a router really sent to a subgraph, on the wire, without touching either.
 */

import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** As received, names in lower case. */
  readonly headers: IncomingHttpHeaders;
}

export interface RecordingProxy {
  /** The target URL with the proxy's origin, e.g. http://127.0.0.1:PORT/graphql for a target ending in /graphql. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(targetUrl: string): Promise<RecordingProxy> {
  const target = new URL(targetUrl);
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    requests.push({ method: incoming.method ?? '', path: incoming.url ?? '', headers: incoming.headers });
    const forwarded = request(
      {
        hostname: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: target.host },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`${target.pathname}${target.search}`, `http://127.0.0.1:${port}`).toString(),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
