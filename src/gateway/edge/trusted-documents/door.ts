/**
 * Trusted documents at the door: before Apollo Server reads a request, a document named by id
 * becomes its text, and with PERSISTED_DOCUMENTS_ONLY nothing else gets in.
 *
 * - `documentId` (GraphQL over HTTP's persisted-documents form; `sha256:<hex>` or the bare hex): the
 *   listed document, or PERSISTED_QUERY_NOT_IN_LIST.
 * - `extensions.persistedQuery.sha256Hash` (Apollo's APQ, what Apollo Client's persisted-queries link
 *   sends): a listed hash is the listed document, without a registration round trip. An unlisted one
 *   goes to Apollo Server's own APQ as before (its default cache: an LRU bounded at 30 MiB), or, with
 *   ONLY, is PERSISTED_QUERY_NOT_IN_LIST with or without a `query`: nobody registers anything.
 * - a freeform `query`: with ONLY, it runs only if it is character for character a listed document,
 *   else QUERY_NOT_IN_SAFELIST, decided by one set lookup: a hostile document is never parsed.
 * - an `extensions.persistedQuery` that is not `{ version: 1, sha256Hash: <64 hex digits> }`:
 *   BAD_REQUEST saying what is wrong, with a manifest or without.
 *
 * A resolved request carries the document as `query` (documentId and the APQ extension removed), so
 * Apollo Server, the operation limits, the estimate and the dry run see exactly what they would for
 * the same text (shared executions are keyed on the words sent: see Admitted.text). Refusals are answered here, in Apollo Router's codes and
 * statuses: nothing refused reaches Apollo Server, the upstream or a key's budget, and nothing of
 * the request (variables included) is logged.
 */

import { badRequest, type GatewayError, persistedQueryNotInList, queryNotInSafelist } from '../../graphql/errors.js';
import type { Manifest } from './manifest.js';

/** How a request's document came: counted by kind, never by document or client. */
export type DocumentKind = 'freeform' | 'persisted' | 'refused';

export interface TrustedDocumentsOptions {
  /** Undefined: the gateway serves none (no PERSISTED_DOCUMENTS), and an id's refusal says so. */
  readonly manifest: Manifest | undefined;
  /** PERSISTED_DOCUMENTS_ONLY. */
  readonly only: boolean;
  /** Told the kind of every GraphQL request that names a document. */
  readonly count: (kind: DocumentKind) => void;
}

/** The request as Apollo Server should read it: POST body (value and text) and query string. */
export interface Admitted {
  readonly refused?: undefined;
  readonly body: unknown;
  /**
   * The body's text as it came: what shared executions are keyed on. A request by id is as unique
   * in its own words as in the document's, and the resolved body is not written out again for it.
   */
  readonly text: string | undefined;
  /** The query string, `?` included, or ''. */
  readonly search: string;
}

export interface Refused {
  readonly refused: GatewayError;
  readonly status: number;
  /** The GraphQL response body (`{ errors }`), as Apollo Server would shape the error. */
  readonly answer: { readonly errors: readonly unknown[] };
}

export interface TrustedDocuments {
  admit(method: string | undefined, body: unknown, text: string | undefined, search: string): Admitted | Refused;
}

type Verdict =
  /** Not a request that names a document (a landing page, an empty body): Apollo Server answers it as before. */
  | { readonly kind: 'pass' }
  | { readonly kind: 'freeform' }
  | { readonly kind: 'persisted'; readonly query: string }
  | { readonly kind: 'refused'; readonly error: GatewayError };

const PASS: Verdict = { kind: 'pass' };
const FREEFORM: Verdict = { kind: 'freeform' };
const PREFIX = 'sha256:';

export function createTrustedDocuments(options: TrustedDocumentsOptions): TrustedDocuments {
  const { manifest, only, count } = options;
  // Hashes are lowercase hex in the manifest; a client may write them in capitals.
  const listed = (hash: string) => manifest?.byHash.get(hash) ?? manifest?.byHash.get(hash.toLowerCase());
  const notListed = (id: string) => refuse(persistedQueryNotInList(id, manifest !== undefined));

  function judge(query: unknown, documentId: unknown, extensions: unknown): Verdict {
    if (documentId !== undefined && documentId !== null) {
      if (typeof documentId !== 'string') return refuse(badRequest('documentId must be a string'));
      const hex = documentId.startsWith(PREFIX) ? documentId.slice(PREFIX.length) : documentId;
      const document = listed(hex);
      if (document === undefined) return notListed(documentId);
      // Which would run? Apollo Router refuses the pair too (CANNOT_SEND_PQ_ID_AND_BODY).
      if (query !== undefined && query !== null) return refuse(badRequest('send a documentId or a query, not both'));
      return { kind: 'persisted', query: document };
    }
    const persisted = (extensions as { persistedQuery?: unknown } | undefined)?.persistedQuery;
    if (persisted !== undefined && persisted !== null) {
      // Apollo Server would answer these INTERNAL_SERVER_ERROR and log each at error level: a
      // client's mistake, which any client could repeat to fill the log.
      const malformed = persistedQueryProblem(persisted);
      if (malformed !== undefined) return refuse(badRequest(malformed));
      const hash = (persisted as { sha256Hash: string }).sha256Hash;
      const document = listed(hash);
      if (document === undefined) return only ? notListed(hash) : FREEFORM;
      // Apollo Server's own answer to a hash that is not the query's, unchanged.
      if (query !== undefined && query !== null && query !== document) {
        return refuse(badRequest('provided sha does not match query'));
      }
      return { kind: 'persisted', query: document };
    }
    if (typeof query !== 'string') return PASS;
    if (only && !manifest?.documents.has(query)) return refuse(queryNotInSafelist());
    return FREEFORM;
  }

  function admitPost(body: unknown, text: string | undefined, search: string): Admitted | Refused {
    if (Array.isArray(body)) {
      // A batch (ALLOW_BATCHED_REQUESTS): every operation in it is judged; one refusal refuses it all.
      const resolved: unknown[] = [];
      let changed = false;
      for (const item of body) {
        const verdict = judgeObject(item);
        if (verdict.kind === 'refused') return refusal(verdict.error);
        changed ||= verdict.kind === 'persisted';
        resolved.push(verdict.kind === 'persisted' ? resolve(item as Record<string, unknown>, verdict.query) : item);
      }
      return { body: changed ? resolved : body, text, search };
    }
    const verdict = judgeObject(body);
    if (verdict.kind === 'refused') return refusal(verdict.error);
    if (verdict.kind !== 'persisted') return { body, text, search };
    return { body: resolve(body as Record<string, unknown>, verdict.query), text, search };
  }

  function judgeObject(body: unknown): Verdict {
    if (typeof body !== 'object' || body === null) return PASS;
    const { query, documentId, extensions } = body as Record<string, unknown>;
    const verdict = judge(query, documentId, extensions);
    if (verdict.kind !== 'pass') count(verdict.kind);
    return verdict;
  }

  function admitGet(body: unknown, text: string | undefined, search: string): Admitted | Refused {
    if (search === '') return { body, text, search };
    const params = new URLSearchParams(search);
    const extensionsText = params.get('extensions');
    let extensions: unknown;
    try {
      extensions = extensionsText === null ? undefined : JSON.parse(extensionsText);
    } catch {
      // Apollo Server answers unreadable extensions with 400, before parsing anything.
    }
    const verdict = judge(params.get('query') ?? undefined, params.get('documentId') ?? undefined, extensions);
    if (verdict.kind !== 'pass') count(verdict.kind);
    if (verdict.kind === 'refused') return refusal(verdict.error);
    if (verdict.kind !== 'persisted') return { body, text, search };
    params.delete('documentId');
    params.set('query', verdict.query);
    const rest = withoutPersistedQuery(extensions);
    if (rest === undefined || Object.keys(rest).length === 0) params.delete('extensions');
    else params.set('extensions', JSON.stringify(rest));
    return { body, text, search: `?${params}` };
  }

  return {
    admit(method, body, text, search) {
      if (method === 'POST') return admitPost(body, text, search);
      if (method === 'GET') return admitGet(body, text, search);
      return { body, text, search };
    },
  };
}

const SHAPE = '{ "version": 1, "sha256Hash": "<the document\'s SHA-256, 64 hex digits>" }';

/**
 * What is wrong with an `extensions.persistedQuery` (Apollo's automatic persisted queries), or
 * undefined when it is well formed. Says what was sent by its type only: the value is the client's.
 */
function persistedQueryProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `extensions.persistedQuery must be an object, ${SHAPE}; got ${kindOf(value)}`;
  }
  const { version, sha256Hash } = value as { version?: unknown; sha256Hash?: unknown };
  if (version !== 1) {
    const got = typeof version === 'number' ? String(version) : kindOf(version);
    return `extensions.persistedQuery.version must be 1, the only version of automatic persisted queries; got ${got}`;
  }
  if (typeof sha256Hash !== 'string' || !/^[0-9a-fA-F]{64}$/.test(sha256Hash)) {
    const got = typeof sha256Hash === 'string' ? `a string of ${sha256Hash.length} characters` : kindOf(sha256Hash);
    return `extensions.persistedQuery.sha256Hash must be the document's SHA-256 as 64 hex digits; got ${got}`;
  }
  return undefined;
}

function kindOf(value: unknown): string {
  if (value === undefined) return 'none';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function refuse(error: GatewayError): Verdict {
  return { kind: 'refused', error };
}

/** The request with the listed document as its `query`, and no id left for Apollo Server to act on. */
function resolve(body: Record<string, unknown>, query: string): Record<string, unknown> {
  const { documentId: _, extensions, ...rest } = body;
  const kept = withoutPersistedQuery(extensions);
  return { ...rest, query, ...(kept === undefined ? {} : { extensions: kept }) };
}

function withoutPersistedQuery(extensions: unknown): Record<string, unknown> | undefined {
  if (typeof extensions !== 'object' || extensions === null) return undefined;
  const { persistedQuery: _, ...rest } = extensions as Record<string, unknown>;
  return rest;
}

/** The error as Apollo Server writes one (`message`, `extensions.code`), its HTTP status as the status. */
function refusal(error: GatewayError): Refused {
  const { http, ...extensions } = error.extensions as { http?: { status?: number } };
  return { refused: error, status: http?.status ?? 400, answer: { errors: [{ message: error.message, extensions }] } };
}
