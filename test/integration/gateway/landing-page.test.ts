/**
 * LANDING_PAGE over real HTTP: GraphiQL's page and every file it needs come from the gateway itself
 * (nothing from another origin), with the right types and caching; `none` and `sandbox` serve none
 * of those files. Every page comes with a Content-Security-Policy that lets its own inline scripts
 * and styles run by hash (and nothing else inline), and may not be framed; Sandbox's offline text
 * says that GraphiQL works offline. test/system/graphiql-browser.test.ts runs the pages in a real
 * browser.
 */

import { createHash } from 'node:crypto';

import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../../helpers/start-stack.js';

const require = createRequire(import.meta.url);

/** The bytes of `file` in the installed package `pkg`, and the package's version. */
function installed(pkg: string, file: string): { version: string; body: Buffer } {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  return { version, body: readFileSync(join(dirname(manifest), file)) };
}

const HTML = { headers: { accept: 'text/html' } };

describe('LANDING_PAGE=graphiql', () => {
  let stack: Stack;
  let origin: string;
  let html: string;
  beforeAll(async () => {
    stack = await startStack({ env: { LANDING_PAGE: 'graphiql' } });
    origin = new URL(stack.gateway.url).origin;
    const response = await fetch(stack.gateway.url, HTML);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    html = await response.text();
  });
  afterAll(() => stack.close());

  /** Every src= and href= in the page. */
  const references = () => [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);

  it('serves a GraphiQL page whose scripts and styles are all on the gateway, named by package version', () => {
    const graphiql = installed('graphiql', 'package.json').version;
    const react = installed('react', 'package.json').version;
    expect(references().sort()).toEqual(
      [
        `/graphiql/graphiql@${graphiql}/graphiql.min.css`,
        `/graphiql/graphiql@${graphiql}/graphiql.min.js`,
        `/graphiql/react-dom@${react}/umd/react-dom.production.min.js`,
        `/graphiql/react@${react}/umd/react.production.min.js`,
      ].sort(),
    );
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).toContain('GraphiQL.createFetcher({ url: location.pathname');
    expect(stack.count()).toBe(0);
  });

  it.each([
    ['graphiql', 'graphiql.min.js', 'text/javascript; charset=utf-8'],
    ['graphiql', 'graphiql.min.css', 'text/css; charset=utf-8'],
    ['react', 'umd/react.production.min.js', 'text/javascript; charset=utf-8'],
    ['react-dom', 'umd/react-dom.production.min.js', 'text/javascript; charset=utf-8'],
  ])('serves %s/%s from the installed package, cacheable for a year', async (pkg, file, type) => {
    const { version, body } = installed(pkg, file);
    const response = await fetch(`${origin}/graphiql/${pkg}@${version}/${file}`, {
      headers: { 'accept-encoding': 'identity' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(type);
    expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(Buffer.from(await response.arrayBuffer()).equals(body)).toBe(true);
  });

  it('compresses for a client that accepts gzip, and answers a revalidation with 304', async () => {
    const { version, body } = installed('graphiql', 'graphiql.min.js');
    const url = `${origin}/graphiql/graphiql@${version}/graphiql.min.js`;
    // undici's fetch would decompress silently; node:http-level bytes are what a browser receives.
    const raw = await rawGet(url, { 'accept-encoding': 'gzip, deflate' });
    expect(raw.status).toBe(200);
    expect(raw.headers['content-encoding']).toBe('gzip');
    expect(raw.headers.vary).toBe('Accept-Encoding');
    expect(raw.body.length).toBeLessThan(body.length / 2);
    expect(gunzipSync(raw.body).equals(body)).toBe(true);

    const again = await rawGet(url, { 'if-none-match': raw.headers.etag as string });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it('answers HEAD without a body and refuses POST with 405', async () => {
    const { version, body } = installed('graphiql', 'graphiql.min.css');
    const url = `${origin}/graphiql/graphiql@${version}/graphiql.min.css`;
    const head = await rawGet(url, { 'accept-encoding': 'identity' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(body.length);
    expect(head.body.length).toBe(0);
    const post = await fetch(url, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers 404 for any other file, another version included', async () => {
    for (const path of ['/graphiql/', '/graphiql/graphiql@0.0.1/graphiql.min.js', '/graphiql/graphiql/package.json']) {
      expect((await fetch(`${origin}${path}`)).status).toBe(404);
    }
  });

  it('still answers GraphQL at the same URL', async () => {
    const response = await stack.query('{ pets(first: 1) { nodes { id } } }');
    expect(response.status).toBe(200);
    expect(response.body.errors).toBeUndefined();
  });
});

/** The `'sha256-…'` source of every inline script (without src) and style element in `html`. */
function inlineSources(html: string): string[] {
  const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
  const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
    .filter(([, attributes]) => !attributes?.includes('src='))
    .map(([, , text]) => hash(text ?? ''));
  const styles = [...html.matchAll(/<style[^>]*>([\s\S]*?)<\/style>/g)].map(([, text]) => hash(text ?? ''));
  return [...scripts, ...styles];
}

/** The policy's directives by name. */
function directives(policy: string | null): Map<string, string[]> {
  return new Map(
    (policy ?? '').split(';').map((part) => {
      const [name, ...sources] = part.trim().split(/\s+/);
      return [name as string, sources];
    }),
  );
}

describe('the landing pages are served with a policy', () => {
  let stacks: Record<'graphiql' | 'sandbox' | 'production', Stack>;
  beforeAll(async () => {
    const [graphiql, sandbox, production] = await Promise.all([
      startStack({ env: { LANDING_PAGE: 'graphiql' } }),
      startStack({ env: { LANDING_PAGE: 'sandbox' } }),
      startStack({ env: { NODE_ENV: 'production' } }),
    ]);
    stacks = { graphiql, sandbox, production } as Record<'graphiql' | 'sandbox' | 'production', Stack>;
  });
  afterAll(() => Promise.all(Object.values(stacks).map((stack) => stack.close())));

  it.each(['graphiql', 'sandbox', 'production'] as const)(
    '%s: a Content-Security-Policy naming each inline script and style by hash, never unsafe-inline; no framing',
    async (page) => {
      const response = await fetch(stacks[page].gateway.url, HTML);
      expect(response.status).toBe(200);
      const html = await response.text();
      const policy = response.headers.get('content-security-policy');
      const parsed = directives(policy);
      const inline = inlineSources(html);
      expect(inline.length).toBeGreaterThan(0);
      for (const source of inline)
        expect([...(parsed.get('script-src') ?? []), ...(parsed.get('style-src') ?? [])]).toContain(source);
      expect(policy).not.toContain('unsafe-inline');
      expect(policy).not.toContain('unsafe-eval');
      expect(parsed.get('frame-ancestors')).toEqual(["'none'"]);
      expect(parsed.get('object-src')).toEqual(["'none'"]);
      expect(parsed.get('base-uri')).toEqual(["'none'"]);
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    },
  );

  it('lets GraphiQL load from the gateway alone', async () => {
    const policy = directives((await fetch(stacks.graphiql.gateway.url, HTML)).headers.get('content-security-policy'));
    expect(policy.get('default-src')).toEqual(["'none'"]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(policy.get('script-src')?.filter((source) => !source.startsWith("'sha256-"))).toEqual(["'self'"]);
  });

  it("lets Sandbox load its script from Apollo's CDN and frame Apollo's Sandbox", async () => {
    const policy = directives((await fetch(stacks.sandbox.gateway.url, HTML)).headers.get('content-security-policy'));
    expect(policy.get('script-src')).toContain('https://embeddable-sandbox.cdn.apollographql.com');
    expect(policy.get('frame-src')).toContain('https://sandbox.embed.apollographql.com');
  });

  it.each(['sandbox', 'production'] as const)(
    "%s: titles Apollo's page with the gateway's name, not Apollo Server's",
    async (page) => {
      const html = await (await fetch(stacks[page].gateway.url, HTML)).text();
      expect([...html.matchAll(/<title>([^<]*)<\/title>/g)].map(([, title]) => title)).toEqual([
        'Pet Store GraphQL gateway',
      ]);
    },
  );

  it('answers the favicon a browser asks for beside any page with 204, cached for a day', async () => {
    for (const page of ['graphiql', 'sandbox', 'production'] as const) {
      const response = await fetch(new URL('/favicon.ico', stacks[page].gateway.url));
      expect(response.status).toBe(204);
      expect(response.headers.get('cache-control')).toBe('public, max-age=86400');
      expect(await response.text()).toBe('');
    }
  });

  it('says on the Sandbox page, for when it cannot load, that LANDING_PAGE=graphiql works offline', async () => {
    const html = await (await fetch(stacks.sandbox.gateway.url, HTML)).text();
    const fallback = /<div class="fallback">([\s\S]*?)<\/div>/.exec(html)?.[1] ?? '';
    expect(fallback).toContain('GraphiQL works offline');
    expect(fallback).toContain('<code>LANDING_PAGE=graphiql</code>');
    expect(html).not.toContain('you might be offline');
  });

  it('marks every other answer nosniff too, and none of them with a page policy', async () => {
    const origin = new URL(stacks.graphiql.gateway.url).origin;
    const answers = [
      await fetch(`${origin}/health`),
      await fetch(`${origin}/nowhere`),
      await fetch(stacks.graphiql.gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      }),
    ];
    for (const response of answers) {
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('content-security-policy')).toBeNull();
    }
  });
});

describe('LANDING_PAGE=none and sandbox', () => {
  let none: Stack;
  let sandbox: Stack;
  beforeAll(async () => {
    [none, sandbox] = await Promise.all([
      startStack({ env: { LANDING_PAGE: 'none' } }),
      startStack({ env: { NODE_ENV: 'production', LANDING_PAGE: 'sandbox' } }),
    ]);
  });
  afterAll(() => Promise.all([none.close(), sandbox.close()]));

  it('serves no page with none: a browser GET is an ordinary GraphQL request without a query', async () => {
    const response = await fetch(none.gateway.url, HTML);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).not.toMatch(/html/);
  });

  it('serves Sandbox when asked for, in production too, and none of GraphiQL files', async () => {
    const response = await fetch(sandbox.gateway.url, HTML);
    expect(await response.text()).toContain('embeddableSandbox');
    const { version } = installed('graphiql', 'package.json');
    const asset = await fetch(`${new URL(sandbox.gateway.url).origin}/graphiql/graphiql@${version}/graphiql.min.js`);
    expect(asset.status).toBe(404);
  });
});

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET (or HEAD) with node:http, which leaves the body as sent. */
function rawGet(url: string, headers: Record<string, string>, method = 'GET'): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
