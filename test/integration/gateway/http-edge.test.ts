/**
 * The gateway's HTTP edge over real HTTP, in front of the reference Pet Store on port 0: health,
 * landing pages and introspection in and outside production, CSRF prevention and CORS preflights.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GqlResponse } from '../../helpers/gql.js';
import { expectData, onlyError, SEED } from '../../helpers/seeded-pets.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

describe('the HTTP edge', () => {
  let dev: Stack;
  let production: Stack;
  let productionIntrospection: Stack;

  beforeAll(async () => {
    // Each kept as it starts: if one fails, afterAll still closes the others.
    await Promise.all([
      startStack({ store: { seed: SEED } }).then((started) => (dev = started)),
      startStack({ store: { seed: SEED }, env: { NODE_ENV: 'production' } }).then((started) => (production = started)),
      startStack({ store: { seed: SEED }, env: { NODE_ENV: 'production', INTROSPECTION: 'true' } }).then(
        (started) => (productionIntrospection = started),
      ),
    ]);
  });
  afterAll(async () => {
    await Promise.all([dev?.close(), production?.close(), productionIntrospection?.close()]);
  });

  const INTROSPECT = '{ __schema { queryType { name } mutationType { name } } }';

  it('answers /health with 200', async () => {
    const response = await fetch(dev.gateway.url.replace(/\/graphql$/, '/health'));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers another path with 404', async () => {
    const response = await fetch(dev.gateway.url.replace(/\/graphql$/, '/nothing'));
    expect(response.status).toBe(404);
  });

  it('serves the embedded Apollo Sandbox to a browser outside production', async () => {
    const response = await fetch(dev.gateway.url, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain('id="embeddableSandbox"');
    expect(html).toContain('new window.EmbeddedSandbox');
    expect(dev.count()).toBe(0);
  });

  it('serves the production landing page, not Sandbox, in production', async () => {
    const response = await fetch(production.gateway.url, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('apollo-server-landing-page.cdn.apollographql.com');
    expect(html).toContain('Welcome to Apollo Server');
    expect(html).not.toContain('embeddableSandbox');
  });

  it('allows introspection outside production', async () => {
    const response = await dev.query(INTROSPECT);
    expectData(response, { __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } } });
  });

  it('refuses introspection in production', async () => {
    const response = await production.query(INTROSPECT);
    expect(response.status).toBe(400);
    const error = onlyError(response, 'GRAPHQL_VALIDATION_FAILED');
    expect(error.extensions?.validationErrorCode).toBe('INTROSPECTION_DISABLED');
    expect(production.count()).toBe(0);
  });

  it('allows introspection in production with INTROSPECTION=true', async () => {
    const response = await productionIntrospection.query(INTROSPECT);
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({
      __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } },
    });
  });

  it('gives no field suggestions in production', async () => {
    const response = await production.query('{ pets { nodez { id } } }');
    expect(response.status).toBe(400);
    expect(response.body.errors?.[0]?.message).not.toContain('Did you mean');
    const devResponse = await dev.query('{ pets { nodez { id } } }');
    expect(devResponse.body.errors?.[0]?.message).toContain('Did you mean');
  });

  it('serves a GET query that carries a preflight header', async () => {
    const url = `${dev.gateway.url}?query=${encodeURIComponent('{ pet(id: "1") { id } }')}`;
    const response = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as GqlResponse['body']).data).toEqual({ pet: { id: '1' } });
  });

  it('refuses a GET query without a preflight header as possible CSRF, with no upstream request', async () => {
    dev.requests.length = 0;
    const url = `${dev.gateway.url}?query=${encodeURIComponent('{ pet(id: "1") { id } }')}`;
    const response = await fetch(url);
    expect(response.status).toBe(400);
    const body = (await response.json()) as GqlResponse['body'];
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(body.errors?.[0]?.message).toContain('CSRF');
    expect(dev.count()).toBe(0);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'refuses a POST with Content-Type %s as possible CSRF',
    async (type) => {
      dev.requests.length = 0;
      const response = await fetch(dev.gateway.url, {
        method: 'POST',
        headers: { 'content-type': type },
        body: JSON.stringify({ query: '{ pet(id: "1") { id } }' }),
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as GqlResponse['body'];
      expect(body.errors?.[0]?.message).toContain('CSRF');
      expect(dev.count()).toBe(0);
    },
  );

  it('refuses a mutation sent with GET', async () => {
    const url = `${dev.gateway.url}?query=${encodeURIComponent('mutation { createPet(input: { name: "G", categoryId: "1" }) { pet { id } } }')}`;
    const response = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
    expect(response.status).toBe(405);
    expect(dev.store.catalogue.size).toBe(SEED.length);
  });

  it('answers a CORS preflight from an allowed origin (Sandbox by default), allowing only the headers it reads', async () => {
    const response = await fetch(dev.gateway.url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://studio.apollographql.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization, x-evil',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://studio.apollographql.com');
    const allowed = response.headers.get('access-control-allow-headers')?.split(', ') ?? [];
    expect(allowed).toEqual(expect.arrayContaining(['content-type', 'authorization']));
    expect(allowed).not.toContain('x-evil');
  });
});
