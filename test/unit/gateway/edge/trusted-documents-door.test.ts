/**
 * The trusted-documents door (src/gateway/edge/trusted-documents/door.ts) on its own: what a request
 * becomes before Apollo Server reads it, and what is refused, for POST bodies and GET query strings.
 * The gateway around it is tested in test/integration/gateway/trusted-documents.test.ts.
 */

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTrustedDocuments, type DocumentKind } from '../../../../src/gateway/edge/trusted-documents/door.js';
import { parseManifest } from '../../../../src/gateway/edge/trusted-documents/manifest.js';

const PETS = 'query Pets { pets { nodes { id } } }';
const HEX = createHash('sha256').update(PETS, 'utf8').digest('hex');
const manifest = parseManifest({ [`sha256:${HEX}`]: PETS }, 'test.json');

function door(only: boolean) {
  const counted: DocumentKind[] = [];
  return { counted, door: createTrustedDocuments({ manifest, only, count: (kind) => counted.push(kind) }) };
}

const code = (admitted: ReturnType<ReturnType<typeof createTrustedDocuments>['admit']>) =>
  admitted.refused === undefined ? undefined : [admitted.status, admitted.refused.code];

describe('the trusted-documents door', () => {
  it('puts the listed document in place of a documentId, keeping variables, operationName and other extensions', () => {
    const { door: d, counted } = door(false);
    const body = {
      documentId: `sha256:${HEX.toUpperCase()}`,
      variables: { a: 1 },
      operationName: 'Pets',
      extensions: { persistedQuery: { version: 1, sha256Hash: HEX }, other: true },
    };
    const text = JSON.stringify(body);
    expect(d.admit('POST', body, text, '')).toEqual({
      body: { variables: { a: 1 }, operationName: 'Pets', extensions: { other: true }, query: PETS },
      text,
      search: '',
    });
    expect(counted).toEqual(['persisted']);
  });

  it('rewrites a GET by id into the query string Apollo Server reads, and leaves other parameters be', () => {
    const { door: d } = door(true);
    const search = `?documentId=${HEX}&variables=%7B%7D`;
    const admitted = d.admit('GET', undefined, undefined, search);
    expect(admitted.refused).toBeUndefined();
    const params = new URLSearchParams((admitted as { search: string }).search);
    expect([...params]).toEqual([
      ['variables', '{}'],
      ['query', PETS],
    ]);
    const apq = d.admit(
      'GET',
      undefined,
      undefined,
      `?extensions=${encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: HEX } }))}`,
    );
    expect([...new URLSearchParams((apq as { search: string }).search)]).toEqual([['query', PETS]]);
  });

  it('refuses what it must, in the codes and statuses of Apollo Router and Apollo Server', () => {
    const open = door(false).door;
    const only = door(true).door;
    const unknown = { documentId: 'sha256:00' };
    expect(code(open.admit('POST', unknown, '', ''))).toEqual([404, 'PERSISTED_QUERY_NOT_IN_LIST']);
    expect(code(open.admit('POST', { documentId: 7 }, '', ''))).toEqual([400, 'BAD_REQUEST']);
    expect(code(open.admit('POST', { documentId: HEX, query: PETS }, '', ''))).toEqual([400, 'BAD_REQUEST']);
    const mismatch = { query: '{ a }', extensions: { persistedQuery: { version: 1, sha256Hash: HEX } } };
    expect(code(open.admit('POST', mismatch, '', ''))).toEqual([400, 'BAD_REQUEST']);
    const unlisted = { extensions: { persistedQuery: { version: 1, sha256Hash: '0'.repeat(64) } } };
    expect(code(open.admit('POST', unlisted, '', ''))).toBeUndefined();
    expect(code(only.admit('POST', unlisted, '', ''))).toEqual([404, 'PERSISTED_QUERY_NOT_IN_LIST']);
    expect(code(only.admit('POST', { query: `${PETS}\n` }, '', ''))).toEqual([403, 'QUERY_NOT_IN_SAFELIST']);
    expect(code(only.admit('POST', { query: PETS }, '', ''))).toBeUndefined();
  });

  it('answers a refusal as Apollo Server shapes an error: message and code, no http extension', () => {
    const refused = door(true).door.admit('POST', { query: '{ a }' }, '', '');
    expect(refused).toMatchObject({
      status: 403,
      answer: {
        errors: [
          {
            message: 'The operation body was not found in the persisted query safelist',
            extensions: { code: 'QUERY_NOT_IN_SAFELIST' },
          },
        ],
      },
    });
  });

  it('passes, uncounted, what names no document: a landing page, an empty body, other methods', () => {
    const { door: d, counted } = door(true);
    for (const [method, body] of [
      ['GET', undefined],
      ['POST', undefined],
      ['POST', 'not json'],
      ['POST', {}],
      ['PUT', { query: '{ a }' }],
    ] as const) {
      expect(d.admit(method, body, undefined, '')).toEqual({ body, text: undefined, search: '' });
    }
    expect(counted).toEqual([]);
  });

  it('keeps a freeform request as it came, counted as freeform', () => {
    const { door: d, counted } = door(false);
    const body = { query: '{ a }' };
    expect(d.admit('POST', body, '{"query":"{ a }"}', '?x=1')).toEqual({
      body,
      text: '{"query":"{ a }"}',
      search: '?x=1',
    });
    expect(counted).toEqual(['freeform']);
  });
});
