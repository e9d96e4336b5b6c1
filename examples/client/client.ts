/**
 * A typed GraphQL client for the gateway: graphql-request, fed the documents graphql-codegen's client
 * preset generates (`__generated__/graphql.ts`), so every result and variable is typed from the
 * schema. Two things on top of graphql-request:
 *
 * - persisted documents: with `persisted`, an operation is sent as its id alone, in the GraphQL over
 *   HTTP persisted-documents form `{ "documentId": "sha256:<hex>", "variables", "operationName" }`,
 *   the id the preset embedded in the document (`__meta__.hash`) and listed in
 *   `__generated__/persisted-documents.json`; the document's text never leaves the client.
 * - `RATE_LIMITED` is waited out: the gateway says how long in `extensions.retryAfter` (seconds).
 *   Safe for `createPet` too: the gateway answers RATE_LIMITED only for a request the Pet Store did
 *   not take (no budget to send it, or 429s), so retrying cannot create a pet twice.
 */

import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { DocumentNode } from 'graphql';
import { ClientError, GraphQLClient } from 'graphql-request';

export interface GatewayClientOptions {
  /** The gateway's GraphQL endpoint, e.g. http://localhost:4000/graphql. */
  readonly url: string;
  /** Sent as `Authorization: Bearer <key>`; without one the gateway uses its own key, if it has one. */
  readonly key?: string;
  /** Send persisted document ids instead of documents. */
  readonly persisted?: boolean;
  /** Longest `retryAfter` waited for before a RATE_LIMITED is given up on (default 60 s). */
  readonly maxRetryAfterSeconds?: number;
  /** Longest one request may take (default 30 s: the gateway answers within its timeout plus its max wait). */
  readonly timeoutMs?: number;
}

export interface GatewayClient {
  /** Runs a generated operation; resolves with its typed data, or rejects with the gateway's errors. */
  request<TResult, TVariables extends object>(
    document: TypedDocumentNode<TResult, TVariables>,
    variables: TVariables,
  ): Promise<TResult>;
}

/** RATE_LIMITED waits per request before the error is passed on. */
const MAX_RETRIES = 3;

export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const { url, key, persisted = false, maxRetryAfterSeconds = 60, timeoutMs = 30_000 } = options;
  // Operation name → document id. graphql-request hands its middleware the operation's name, not its
  // document; codegen refuses two operations of one name, so the name says which document it is.
  const documentIds = new Map<string, string>();
  const client = new GraphQLClient(url, {
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    requestMiddleware: (request) => {
      if (!persisted) return request;
      const documentId = documentIds.get(request.operationName ?? '');
      if (documentId === undefined) throw new Error(`no persisted document id for ${request.operationName}`);
      const { operationName, variables } = request;
      return { ...request, body: JSON.stringify({ documentId, variables, operationName }) };
    },
  });

  return {
    async request<TResult, TVariables extends object>(
      document: TypedDocumentNode<TResult, TVariables>,
      variables: TVariables,
    ): Promise<TResult> {
      if (persisted) register(documentIds, document);
      for (let attempt = 0; ; attempt++) {
        try {
          // The document already ties TResult to TVariables; graphql-request need not check it again.
          const signal = AbortSignal.timeout(timeoutMs);
          return await client.request<TResult, object>({ document: document as DocumentNode, variables, signal });
        } catch (error) {
          const wait = retryAfterSeconds(error);
          if (wait === undefined || wait > maxRetryAfterSeconds || attempt === MAX_RETRIES) throw error;
          await new Promise((resolve) => setTimeout(resolve, wait * 1000));
        }
      }
    },
  };
}

/** Notes the id the client preset embedded in a document, under the document's operation name. */
function register(documentIds: Map<string, string>, document: DocumentNode): void {
  const operation = document.definitions.find((definition) => definition.kind === 'OperationDefinition');
  const name = operation?.name?.value;
  const id = (document as { __meta__?: { hash?: unknown } }).__meta__?.hash;
  if (name === undefined || typeof id !== 'string') {
    throw new Error(`${name ?? 'an anonymous operation'} has no persisted document id: run npm run codegen`);
  }
  documentIds.set(name, id);
}

/** The seconds a RATE_LIMITED answer asks the client to wait; undefined for any other failure. */
function retryAfterSeconds(error: unknown): number | undefined {
  if (!(error instanceof ClientError)) return undefined;
  const limited = error.response.errors?.find((e) => e.extensions?.code === 'RATE_LIMITED');
  const seconds = limited?.extensions?.retryAfter;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** The gateway's errors as one line each (`CODE: message`), for people. */
export function describeError(error: unknown): string {
  if (error instanceof ClientError && error.response.errors?.length) {
    return error.response.errors.map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}`).join('\n');
  }
  if (error instanceof ClientError) return `HTTP ${error.response.status} from the gateway`;
  if (!(error instanceof Error)) return String(error);
  // fetch's "fetch failed" says why only in its cause (ECONNREFUSED, ENOTFOUND, …).
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? `${error.message} (${code})` : error.message;
}
