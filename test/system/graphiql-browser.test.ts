/**
 * The landing pages in a real browser, offline: headless Chromium opens them with every request
 * outside loopback refused. GraphiQL loads under its Content-Security-Policy with no violation, a
 * query is typed into the editor and run, and the result pane shows the pets. Sandbox, whose
 * script cannot come from Apollo's CDN, shows the fallback that says GraphiQL works offline (its
 * tab titled with the gateway's name), and its inline script and styles run under the gateway's
 * policy (their hashes are right).
 * Screenshots land in artifacts/browser/ (not committed). Skipped, saying why, where Chromium is
 * not installed.
 */

import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoCatalogue } from '../../src/petstore/seed.js';
import { type Chromium, chromiumMissing, launchChromium } from '../helpers/chromium.js';
import { type Stack, startStack } from '../helpers/start-stack.js';

const SCREENSHOTS = fileURLToPath(new URL('../../artifacts/browser/', import.meta.url));
const QUERY = '{ pets(first: 3) { nodes { id name } } }';
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

const missing = chromiumMissing();
if (missing) console.warn(`test/browser: skipped, ${missing}`);

describe.skipIf(missing !== undefined)(
  `GraphiQL offline in headless Chromium${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let stack: Stack;
    let chromium: Chromium;
    let page: Page;
    /** Requests the page tried to make outside loopback (each was refused). */
    const refused: string[] = [];
    /** Every request the page made. */
    const requested: string[] = [];
    const pageErrors: string[] = [];

    beforeAll(async () => {
      await mkdir(SCREENSHOTS, { recursive: true });
      [stack, chromium] = await Promise.all([
        startStack({ store: { seed: demoCatalogue() }, env: { LANDING_PAGE: 'graphiql' } }),
        launchChromium(),
      ]);
      const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 } });
      // Offline but for loopback: what a browser behind a firewall, or on a plane, can reach.
      await context.route('**/*', (route) => {
        const url = route.request().url();
        requested.push(url);
        const { protocol, hostname } = new URL(url);
        if (protocol === 'data:' || protocol === 'blob:' || LOOPBACK.has(hostname)) return route.continue();
        refused.push(url);
        return route.abort('internetdisconnected');
      });
      await recordViolations(context);
      page = await context.newPage();
      page.on('pageerror', (error) => pageErrors.push(error.message));
    }, 120_000);

    afterAll(async () => {
      await chromium?.close();
      await stack?.close();
    });

    it('shows the explorer with no request outside loopback, and nothing refused by its policy', async () => {
      const response = await page.goto(stack.gateway.url, { waitUntil: 'networkidle' });
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
      expect(refused).toEqual([]);
      await page.locator('.graphiql-query-editor .CodeMirror').waitFor({ timeout: 15_000 });
      // The schema arrived by introspection: the documentation explorer can open on Query.
      await page.getByRole('button', { name: /documentation explorer/i }).click();
      await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().waitFor();
      await page.screenshot({ path: `${SCREENSHOTS}graphiql-loaded.png` });

      expect(refused).toEqual([]);
      expect(pageErrors).toEqual([]);
      expect(await violations(page)).toEqual([]);
      const origin = new URL(stack.gateway.url).origin;
      expect(requested.filter((url) => url.startsWith(`${origin}/graphiql/`))).toHaveLength(4);
    }, 40_000);

    it('runs a query typed into the editor and shows the pets in the result pane', async () => {
      const expected = await stack.query(QUERY);
      expect(expected.body.data?.pets.nodes).toHaveLength(3);

      await page.locator('.graphiql-query-editor .CodeMirror').click();
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.press('Delete');
      await page.keyboard.type(QUERY, { delay: 10 });
      // GraphiQL opens completion hints while typing; Escape closes them without choosing one.
      await page.keyboard.press('Escape');
      expect(await editorText(page, '.graphiql-query-editor')).toBe(QUERY);

      await page.getByRole('button', { name: /execute query/i }).click();
      const resultPane = page.locator('.graphiql-response');
      for (const pet of expected.body.data?.pets.nodes ?? []) {
        await resultPane.getByText(pet.name, { exact: false }).first().waitFor({ timeout: 15_000 });
      }
      await page.screenshot({ path: `${SCREENSHOTS}graphiql-result.png` });

      const shown = JSON.parse(await editorText(page, '.graphiql-response'));
      expect(shown.data).toEqual(expected.body.data);
      expect(refused).toEqual([]);
      expect(pageErrors).toEqual([]);
      expect(await violations(page)).toEqual([]);
    }, 40_000);
  },
);

describe.skipIf(missing !== undefined)(
  `Apollo Sandbox offline in headless Chromium${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let stack: Stack;
    let chromium: Chromium;
    let page: Page;
    const pageErrors: string[] = [];

    beforeAll(async () => {
      await mkdir(SCREENSHOTS, { recursive: true });
      [stack, chromium] = await Promise.all([startStack({ env: { LANDING_PAGE: 'sandbox' } }), launchChromium()]);
      const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.route('**/*', (route) => {
        const { protocol, hostname } = new URL(route.request().url());
        if (protocol === 'data:' || LOOPBACK.has(hostname)) return route.continue();
        return route.abort('internetdisconnected');
      });
      await recordViolations(context);
      page = await context.newPage();
      page.on('pageerror', (error) => pageErrors.push(error.message));
    }, 120_000);

    afterAll(async () => {
      await chromium?.close();
      await stack?.close();
    });

    it("says that LANDING_PAGE=graphiql works offline under the gateway's name, and runs its inline script and styles under the policy", async () => {
      const response = await page.goto(stack.gateway.url, { waitUntil: 'networkidle' });
      expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
      // The fallback fades in after a second (Apollo's own style, which the policy must let apply).
      const fallback = page.locator('.fallback');
      await page.waitForFunction(
        () =>
          Number(
            (globalThis as any).getComputedStyle((globalThis as any).document.querySelector('.fallback')).opacity,
          ) === 1,
        undefined,
        { timeout: 10_000 },
      );
      const text = await fallback.innerText();
      expect(text).toContain('GraphiQL works offline');
      expect(text).toContain('LANDING_PAGE=graphiql');
      expect(text).not.toContain('you might be offline');
      // The tab names the gateway, not Apollo Server.
      expect(await page.title()).toBe('Pet Store GraphQL gateway');
      // The inline script ran (under both Apollo's nonce and the gateway's hash): it got as far as
      // calling the embed that never loaded.
      expect(pageErrors.join('\n')).toMatch(/EmbeddedSandbox is not a constructor/);
      expect(await violations(page)).toEqual([]);
      await page.screenshot({ path: `${SCREENSHOTS}sandbox-offline.png` });
    }, 40_000);
  },
);

/** Records every Content-Security-Policy violation of the context's pages, from before their first script. */
async function recordViolations(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const scope = globalThis as any;
    scope.__violations = [];
    scope.document.addEventListener('securitypolicyviolation', (event: any) => {
      scope.__violations.push(`${event.effectiveDirective} refused ${event.blockedURI || 'inline'}`);
    });
  });
}

function violations(page: Page): Promise<string[]> {
  return page.evaluate(() => (globalThis as any).__violations as string[]);
}

/** The whole text of the CodeMirror editor inside `container` (it renders only the visible lines). */
function editorText(page: Page, container: string): Promise<string> {
  // Runs in the page; this project's TypeScript has no DOM types, so the one call used is typed here.
  return page.evaluate((selector) => {
    const { document } = globalThis as any;
    return (document.querySelector(`${selector} .CodeMirror`).CodeMirror as { getValue(): string }).getValue();
  }, container);
}
