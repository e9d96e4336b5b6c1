/**
 * One execution for identical operations in flight. A query that arrives while the same one (same
 * body, same key, same Accept and Content-Type, same CSRF headers) is being executed for the same
 * key waits for that execution's answer instead of running Apollo Server and graphql-js again: its
 * answer would be the same bytes, and at the edge it costs a map lookup. This is the GraphQL-level
 * twin of the REST client's coalescing of identical GETs (rest/sharing.ts), and PETSTORE_COALESCE
 * turns both off.
 *
 * What keeps it honest: only queries are shared, never a mutation; only in flight, never after the
 * answer (PETSTORE_CACHE_TTL is the cache); a write for the key ends sharing of everything that
 * started before it, so a read that starts after a write never gets an answer from before it; the
 * execution is cancelled only when every client waiting for it has gone; and a shared answer says
 * it sent nothing upstream (`extensions.cost.actualUpstreamRequests: 0`), because it did not.
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { HTTPGraphQLResponse } from '@apollo/server';
import { type DocumentNode, Kind, OperationTypeNode, parse } from 'graphql';
import type { OperationTrace } from '../observability/tracing.js';
import { Cancellation, type CancelSignal } from '../shared/cancel.js';
import { InFlight } from '../shared/in-flight.js';

export interface SharedExecutions {
  /**
   * The name under which a request may share an execution, or undefined when it may not: not a
   * POST of one JSON operation, not a query, a body over the size shared, an unreadable credential.
   */
  keyOf(headers: IncomingHttpHeaders, text: string, body: unknown): SharingKey | undefined;
  /**
   * The answer for a request named `key`: the execution in flight under that name, or a new one
   * run by `execute` with a signal aborted once every client waiting for it has gone. `whenGone`
   * registers what to do when this request's own client goes (a listener: most requests never
   * need one). With tracing on, `trace` is this request's span: one that joins an execution is
   * told whose it joined.
   */
  answer(
    key: SharingKey,
    whenGone: (leave: (reason: unknown) => void) => void,
    execute: (signal: CancelSignal) => Promise<HTTPGraphQLResponse>,
    trace?: OperationTrace,
  ): Promise<HTTPGraphQLResponse>;
  /** Ends sharing of the key's executions in flight (by key digest): a write for it was sent. */
  invalidate(keyId: string): void;
}

export interface SharingKey {
  readonly keyId: string;
  readonly name: string;
}

export interface SharedExecutionsOptions {
  /** The digest of the key a request's operation will use, or undefined when its credential is unreadable. */
  readonly keyIdOf: (headers: IncomingHttpHeaders) => string | undefined;
  /** Told of every request answered by an execution it joined. */
  readonly onShared?: () => void;
}

/** Bodies longer than this are not shared: the map key is the whole body. */
const MAX_SHARED_BODY = 16 * 1024;
/** Documents whose kind (query-only or not) is remembered, in each of the two maps (unnamed, named). */
const MAX_DOCUMENTS = 1_000;

interface Execution {
  readonly keyId: string;
  readonly controller: Cancellation;
  readonly response: Promise<HTTPGraphQLResponse>;
  /** Requests still waiting for it; at 0 it is cancelled. */
  waiting: number;
  /** The answer as those who joined get it, made once from the first one's. */
  joined?: Promise<HTTPGraphQLResponse>;
  /** The span of the request that runs it, when tracing is on. */
  readonly trace: OperationTrace | undefined;
}

export function createSharedExecutions(options: SharedExecutionsOptions): SharedExecutions {
  const inFlight = new InFlight<Execution>();
  /**
   * What is known of documents: by the document alone when the request names no operation (most
   * do not, and the query string is then the key as it came, with no copy to join it to a name),
   * by name and document otherwise.
   */
  const unnamed = new Map<string, boolean>();
  const named = new Map<string, boolean>();

  /** Whether the operation the request names is a query (and the document parses). */
  function isQuery(query: string, operationName: unknown): boolean {
    const name = typeof operationName === 'string' ? operationName : '';
    const queries = name === '' ? unnamed : named;
    const id = name === '' ? query : `${name}\n${query}`;
    let known = queries.get(id);
    if (known === undefined) {
      known = queryOperation(query, name);
      if (queries.size >= MAX_DOCUMENTS) queries.delete(queries.keys().next().value as string);
      queries.set(id, known);
    }
    return known;
  }

  function wait(
    execution: Execution,
    whenGone: (leave: (reason: unknown) => void) => void,
    response: Promise<HTTPGraphQLResponse>,
  ): Promise<HTTPGraphQLResponse> {
    execution.waiting++;
    return new Promise<HTTPGraphQLResponse>((resolve, reject) => {
      let settled = false;
      whenGone((reason) => {
        if (settled) return;
        settled = true;
        if (--execution.waiting === 0) execution.controller.abort(reason);
        reject(reason);
      });
      response.then(
        (answer) => {
          settled = true;
          resolve(answer);
        },
        (error: unknown) => {
          settled = true;
          reject(error);
        },
      );
    });
  }

  return {
    keyOf(headers, text, body) {
      if (text.length > MAX_SHARED_BODY || typeof body !== 'object' || body === null || Array.isArray(body)) {
        return undefined;
      }
      const { query, operationName } = body as { query?: unknown; operationName?: unknown };
      const accept = headers.accept ?? '';
      // An incremental (multipart) answer is a stream: not one set of bytes to hand to several clients.
      if (typeof query !== 'string' || accept.includes('multipart/')) return undefined;
      if (!isQuery(query, operationName)) return undefined;
      const keyId = options.keyIdOf(headers);
      if (keyId === undefined) return undefined;
      // Everything Apollo Server reads of a request besides the body: content negotiation and its CSRF check.
      const preflight = `${headers['apollo-require-preflight'] ?? ''}\n${headers['x-apollo-operation-name'] ?? ''}`;
      return { keyId, name: `${keyId}\n${accept}\n${headers['content-type'] ?? ''}\n${preflight}\n${text}` };
    },

    answer(key, whenGone, execute, trace) {
      const running = inFlight.get(key.name);
      if (running !== undefined && !running.controller.aborted) {
        options.onShared?.();
        if (trace !== undefined && running.trace !== undefined) trace.join(running.trace);
        running.joined ??= running.response.then(asJoined);
        return wait(running, whenGone, running.joined);
      }
      const controller = new Cancellation();
      const execution: Execution = {
        keyId: key.keyId,
        controller,
        waiting: 0,
        response: execute(controller),
        trace,
      };
      inFlight.set(key.name, execution);
      const settle = () => {
        if (inFlight.get(key.name) === execution) inFlight.delete(key.name);
      };
      execution.response.then(settle, settle);
      return wait(execution, whenGone, execution.response);
    },

    invalidate(keyId) {
      inFlight.deleteWhere((_, execution) => execution.keyId === keyId);
    },
  };
}

/** Whether the operation `name` selects in `query` (the only one when unnamed) is a query. */
function queryOperation(query: string, name: string): boolean {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: 10_000, noLocation: true });
  } catch {
    return false;
  }
  const operations = document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  const chosen = name === '' ? operations : operations.filter((operation) => operation.name?.value === name);
  return chosen.length === 1 && chosen[0]?.operation === OperationTypeNode.QUERY;
}

/**
 * The end of an answer as Apollo Server writes it with plugins/budget-extensions.ts's cost last
 * (no stale note after it): `extensions` is written last, so this is the cost, not the data.
 */
const COST_AT_END = /("cost":\{"estimatedUpstreamRequests":[0-9]+,"actualUpstreamRequests":)[0-9]+(\}\}\}\n?)$/;

/**
 * The answer as a request that joined the execution gets it: the same, except that it sent nothing
 * upstream. A body that is not a JSON object with `extensions.cost` is passed on as it is.
 */
function asJoined(response: HTTPGraphQLResponse): HTTPGraphQLResponse {
  if (response.body.kind !== 'complete') throw new Error('a chunked answer is never shared');
  const text = response.body.string;
  if (!text.includes('"actualUpstreamRequests"')) return response;
  // The common answer has its count rewritten in place, without parsing the whole answer again;
  // any other shape (a stale note, another order) goes through JSON.
  const end = COST_AT_END.exec(text);
  if (end !== null) {
    const string = `${text.slice(0, end.index)}${end[1]}0${end[2]}`;
    return { ...response, body: { kind: 'complete', string } };
  }
  let value: { extensions?: { cost?: { actualUpstreamRequests?: unknown } } };
  try {
    value = JSON.parse(text);
  } catch {
    return response;
  }
  const cost = value.extensions?.cost;
  if (cost === undefined || typeof cost !== 'object' || cost === null) return response;
  cost.actualUpstreamRequests = 0;
  // As Apollo Server writes a response (prettyJSONStringify): JSON and a newline.
  return { ...response, body: { kind: 'complete', string: `${JSON.stringify(value)}\n` } };
}
