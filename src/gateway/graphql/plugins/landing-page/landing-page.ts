/**
 * What a browser gets at GET /graphql (LANDING_PAGE): Apollo Sandbox, Apollo's production page,
 * nothing, or GraphiQL (graphiql.ts). Sandbox's script comes from Apollo's CDN, so it cannot load
 * without internet access: its fallback text then says that LANDING_PAGE=graphiql works offline.
 * Each page comes with its security headers (page-policy.ts), which the HTTP edge sets on it.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import {
  ApolloServerPluginLandingPageLocalDefault,
  ApolloServerPluginLandingPageProductionDefault,
} from '@apollo/server/plugin/landingPage/default';
import type { LandingPage } from '../../../../config.js';
import { createGraphiql } from './graphiql.js';
import { apolloPageHeaders, type PageHeaders } from './page-policy.js';

export interface LandingPageSetup {
  readonly plugin: ApolloServerPlugin<BaseContext>;
  /** Answers a request for one of the page's own files; false when the path is not one. */
  readonly serveAsset?: (req: IncomingMessage, res: ServerResponse, pathname: string) => boolean;
  /** The page's security headers (Content-Security-Policy, X-Frame-Options); known once Apollo Server has started. */
  pageHeaders(): PageHeaders;
}

export function createLandingPage(choice: LandingPage): LandingPageSetup {
  switch (choice) {
    case 'sandbox':
      return apolloPage(ApolloServerPluginLandingPageLocalDefault({ footer: false, embed: true }), (html) =>
        offlineFallback(titled(html)),
      );
    case 'production':
      return apolloPage(ApolloServerPluginLandingPageProductionDefault({ footer: false }), titled);
    case 'none':
      return { plugin: ApolloServerPluginLandingPageDisabled(), pageHeaders: () => ({}) };
    case 'graphiql':
      return createGraphiql();
  }
}

/**
 * Apollo's page through `rewrite`. Its policy is hashed from its first rendering: Apollo renders
 * the page anew for each response, with a fresh nonce in a <meta> policy, but the inline scripts
 * and styles themselves do not change.
 */
function apolloPage(inner: ApolloServerPlugin<BaseContext>, rewrite: (html: string) => string): LandingPageSetup {
  let headers: PageHeaders = {};
  return {
    plugin: {
      async serverWillStart(context) {
        const listener = await inner.serverWillStart?.(context);
        const page = await listener?.renderLandingPage?.();
        if (listener === undefined || page === undefined) return listener;
        const html = async () => rewrite(typeof page.html === 'string' ? page.html : await page.html());
        headers = apolloPageHeaders(await html());
        return { ...listener, renderLandingPage: async () => ({ html }) };
      },
    },
    pageHeaders: () => headers,
  };
}

/** Apollo's "you might be offline" block on the Sandbox page; it fades in after a second if Sandbox has not covered it. */
const FALLBACK = /<div class="fallback">[\s\S]*?<\/div>/;

const OFFLINE_FALLBACK = `<div class="fallback">
  <h1>Pet Store GraphQL gateway</h1>
  <p>Apollo Sandbox cannot be loaded: its script comes from Apollo's CDN
  (embeddable-sandbox.cdn.apollographql.com), which this browser cannot reach. It may be offline,
  or a firewall or a content blocker stops it.</p>
  <p><strong>GraphiQL works offline:</strong> start the gateway with <code>LANDING_PAGE=graphiql</code>
  and reload this page. GraphQL itself is answered here either way (POST to this URL).</p>
</div>`;

/** The page as a browser tab and its history name it: this gateway, not "Apollo Server". */
function titled(html: string): string {
  return html.replace(/<title>[^<]*<\/title>/, '<title>Pet Store GraphQL gateway</title>');
}

/** Sandbox's page with a fallback that says what to do offline, instead of Apollo's stock text. */
export function offlineFallback(html: string): string {
  return html.replace(FALLBACK, () => OFFLINE_FALLBACK);
}
