/**
 * The security headers of a landing page (the HTML a browser gets at GET /graphql). Each page's
 * Content-Security-Policy names what it loads and no more: its own inline scripts and styles by
 * SHA-256 hash (CSP Level 3 hash-source), never 'unsafe-inline', so markup injected into the page
 * could not run. No page may be framed by another site (`frame-ancestors 'none'`, and
 * X-Frame-Options for browsers without CSP 2): an explorer that spends the server key must not be
 * clicked through from under someone else's page.
 */

import { createHash } from 'node:crypto';

export type PageHeaders = Readonly<Record<string, string>>;

/** What no landing page here uses, denied on every one (and frame-ancestors, which a <meta> policy cannot carry). */
const ALWAYS = ["object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"];

/** Where Apollo's pages load from: the lists Apollo Server's own <meta> policy allows (its development host aside). */
const APOLLO_LANDING_CDN = 'https://apollo-server-landing-page.cdn.apollographql.com';
const APOLLO_SCRIPTS = [
  APOLLO_LANDING_CDN,
  'https://embeddable-sandbox.cdn.apollographql.com',
  'https://embeddable-explorer.cdn.apollographql.com',
];
const APOLLO_FRAMES = ['https://explorer.embed.apollographql.com', 'https://sandbox.embed.apollographql.com'];

export interface InlineHashes {
  /** A `'sha256-…'` source per inline <script> (one without src). */
  readonly scripts: readonly string[];
  /** A `'sha256-…'` source per <style> element. */
  readonly styles: readonly string[];
}

/** The hash-sources of `html`'s inline scripts and styles: the exact text between their tags, as a browser hashes it. */
export function inlineHashes(html: string): InlineHashes {
  const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
  const scripts: string[] = [];
  for (const [, attributes, text] of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (!/\bsrc\s*=/i.test(attributes ?? '')) scripts.push(hash(text ?? ''));
  }
  const styles = [...html.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style>/gi)].map(([, text]) => hash(text ?? ''));
  return { scripts: [...new Set(scripts)], styles: [...new Set(styles)] };
}

/**
 * GraphiQL, served whole by the gateway: everything from its own origin, nothing from anywhere
 * else; images and fonts its stylesheet inlines as data: URLs.
 */
export function graphiqlHeaders(html: string): PageHeaders {
  const { scripts, styles } = inlineHashes(html);
  return headers([
    "default-src 'none'",
    ["script-src 'self'", ...scripts].join(' '),
    ["style-src 'self'", ...styles].join(' '),
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
  ]);
}

/**
 * Apollo's pages (Sandbox, the production page): the directives Apollo Server's own <meta> policy
 * sets, with hashes where it uses a nonce made per response (a browser enforces both policies),
 * and no more: what the embedded Sandbox loads and calls beyond them cannot be checked without
 * Apollo's CDN, so the directives Apollo leaves open (connect-src, font-src) stay open.
 */
export function apolloPageHeaders(html: string): PageHeaders {
  const { scripts, styles } = inlineHashes(html);
  return headers([
    ["script-src 'self'", ...scripts, ...APOLLO_SCRIPTS].join(' '),
    ['style-src', ...styles, ...APOLLO_SCRIPTS, 'https://fonts.googleapis.com'].join(' '),
    `img-src ${APOLLO_LANDING_CDN}`,
    `manifest-src ${APOLLO_LANDING_CDN}`,
    `frame-src ${APOLLO_FRAMES.join(' ')}`,
  ]);
}

function headers(directives: readonly string[]): PageHeaders {
  return Object.freeze({
    'Content-Security-Policy': [...directives, ...ALWAYS].join('; '),
    'X-Frame-Options': 'DENY',
  });
}
