/**
 * GraphiQL as the landing page (LANDING_PAGE=graphiql): the page and every file it needs are served
 * by this process (the files: graphiql-files.ts), so it works offline, under a policy that lets it
 * load nothing from anywhere else (page-policy.ts).
 */

import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GRAPHIQL_PREFIX, type GraphiqlFileName, locateGraphiqlFiles } from './graphiql-files.js';
import { graphiqlHeaders, type PageHeaders } from './page-policy.js';

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  gzipped?: Buffer;
}

/** The GraphiQL page, its files, and its policy. */
export function createGraphiql(): {
  plugin: ApolloServerPlugin<BaseContext>;
  serveAsset(req: IncomingMessage, res: ServerResponse, pathname: string): boolean;
  pageHeaders(): PageHeaders;
} {
  // Read once, at start: a missing file fails there, not on a browser's first visit.
  const files = locateGraphiqlFiles();
  const assets = new Map<string, Asset>();
  for (const { url, type, path } of Object.values(files)) assets.set(url, { type, body: readFileSync(path) });
  const html = graphiqlHtml({
    react: files.react.url,
    reactDom: files.reactDom.url,
    script: files.script.url,
    styles: files.styles.url,
  });
  const headers = graphiqlHeaders(html);
  return {
    plugin: {
      async serverWillStart() {
        return {
          async renderLandingPage() {
            return { html };
          },
        };
      },
    },
    pageHeaders: () => headers,
    serveAsset: (req, res, pathname) => {
      const asset = assets.get(pathname);
      if (!asset) return false;
      sendAsset(req, res, pathname, asset);
      return true;
    },
  };
}

function sendAsset(req: IncomingMessage, res: ServerResponse, pathname: string, asset: Asset): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD' }).end();
    return;
  }
  // The URL names the package version, so the content never changes under it (RFC 8246, immutable).
  const etag = `"${pathname.slice(GRAPHIQL_PREFIX.length)}"`;
  res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
  res.setHeader('ETag', etag);
  res.setHeader('Vary', 'Accept-Encoding');
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304).end();
    return;
  }
  let body = asset.body;
  if (acceptsGzip(req.headers['accept-encoding'])) {
    // graphiql.min.js is about 1 MB and compresses to a quarter; compressed once, on first request.
    asset.gzipped ??= gzipSync(asset.body);
    body = asset.gzipped;
    res.setHeader('Content-Encoding', 'gzip');
  }
  // X-Content-Type-Options: nosniff comes with every answer of the edge (http.ts).
  res.writeHead(200, { 'Content-Type': asset.type, 'Content-Length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** RFC 9110 section 12.5.3: gzip is acceptable unless absent or given q=0. */
export function acceptsGzip(header: string | undefined): boolean {
  for (const part of (header ?? '').split(',')) {
    const [coding, ...params] = part.split(';').map((piece) => piece.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.find((param) => param.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

function graphiqlHtml(urls: Readonly<Record<GraphiqlFileName, string>>): string {
  const defaultQuery = `# GraphiQL, served by the gateway
# itself: it works offline.
# Run: play button or Ctrl-Enter.
# A key of your own: Headers tab,
# {"Authorization": "Bearer <key>"}

{
  pets(first: 5) {
    nodes { id name status }
  }
}
`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphiQL · Pet Store GraphQL gateway</title>
<link rel="stylesheet" href="${urls.styles}">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<script src="${urls.react}"></script>
<script src="${urls.reactDom}"></script>
<script src="${urls.script}"></script>
<script>
  // The endpoint is the page's own URL; graphql 16 has no @defer, so plain JSON responses.
  const fetcher = GraphiQL.createFetcher({ url: location.pathname, enableIncrementalDelivery: false });
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, { fetcher, defaultQuery: ${JSON.stringify(defaultQuery)} }),
  );
</script>
</body>
</html>
`;
}
