/**
 * The span of one GraphQL request (OpenTelemetry, kind SERVER), a child of the client's W3C
 * `traceparent` when it sends one. Its upstream requests are its children (upstream/stages/span.ts). Named
 * as the GraphQL semantic conventions name it (`query Pets`; `GraphQL Operation` until the operation
 * is known), with the operation's type and name, the document's SHA-256 (never the document: it may
 * hold literals a client would not want kept), the HTTP status, the first error's code as its status,
 * and what the operation was estimated to cost and really sent upstream.
 *
 * A request answered by an identical one's execution (shared-executions.ts) gets a span of its own,
 * marked `petstore.shared_execution` and linked to the span of the request that executed.
 *
 * No context manager: the span travels explicitly (context → Operation → each upstream call), so
 * nothing here depends on AsyncLocalStorage. Only made when a tracer is configured.
 */

import type { IncomingHttpHeaders } from 'node:http';
import {
  defaultTextMapGetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/** What the operation was, once Apollo Server has resolved it. */
export interface OperationDescription {
  /** query, mutation or subscription. */
  readonly type: string;
  readonly name: string | undefined;
  /** SHA-256 of the document, hex (Apollo Server's queryHash, the id persisted queries use too). */
  readonly hash: string | undefined;
}

export interface OperationOutcome {
  /** `extensions.code` of the first error; undefined when there was none. */
  readonly code: string | undefined;
  readonly estimated?: number;
  readonly actual?: number;
}

export interface OperationTrace {
  readonly span: Span;
  readonly description: OperationDescription | undefined;
  readonly outcome: OperationOutcome | undefined;
  describe(description: OperationDescription): void;
  /** What came of the operation (Apollo Server's answer); the first word counts. */
  conclude(outcome: OperationOutcome): void;
  /** This request is answered by `leader`'s execution. */
  join(leader: OperationTrace): void;
  /**
   * The answer is known: a request that joined another's execution takes what that one was; an
   * error answer nobody concluded on (refused before Apollo Server's plugins ran, as a request
   * without a credential is) is concluded from the body's first error code.
   */
  answered(status: number, body: string | undefined): void;
  /** Ends the span with the HTTP status answered. */
  end(status: number): void;
}

export interface Tracing {
  /** A span for a request with these headers, its parent the client's `traceparent` when valid. */
  start(headers: IncomingHttpHeaders, requestId: string): OperationTrace;
}

/** Semantic conventions' fallback when the operation is unknown (unparsable, refused before it ran). */
const UNKNOWN_OPERATION = 'GraphQL Operation';
/** A client chooses the operation name: a span name stays readable however long it sends one. */
const MAX_NAME = 100;

export function createTracing(tracer: Tracer): Tracing {
  const propagator = new W3CTraceContextPropagator();
  return {
    start(headers, requestId) {
      const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      const span = tracer.startSpan(
        UNKNOWN_OPERATION,
        { kind: SpanKind.SERVER, attributes: { 'petstore.request_id': requestId } },
        parent,
      );
      return operationTrace(span);
    },
  };
}

function operationTrace(span: Span): OperationTrace {
  let leader: OperationTrace | undefined;
  const trace: Omit<OperationTrace, 'description' | 'outcome'> & {
    description: OperationDescription | undefined;
    outcome: OperationOutcome | undefined;
  } = {
    span,
    description: undefined,
    outcome: undefined,
    describe(description) {
      trace.description = description;
      const name = description.name?.slice(0, MAX_NAME);
      span.updateName(name ? `${description.type} ${name}` : description.type);
      span.setAttribute('graphql.operation.type', description.type);
      if (name) span.setAttribute('graphql.operation.name', name);
      if (description.hash) span.setAttribute('graphql.document.hash', description.hash);
    },
    conclude(outcome) {
      if (trace.outcome !== undefined) return;
      trace.outcome = outcome;
      if (outcome.estimated !== undefined) {
        span.setAttribute('petstore.cost.estimated_upstream_requests', outcome.estimated);
      }
      if (outcome.actual !== undefined) span.setAttribute('petstore.cost.actual_upstream_requests', outcome.actual);
      if (outcome.code !== undefined) {
        span.setAttribute('error.type', outcome.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.code });
      }
    },
    join(first) {
      leader = first;
      span.setAttribute('petstore.shared_execution', true);
      span.addLink({ context: first.span.spanContext(), attributes: { 'petstore.link': 'shared execution' } });
    },
    answered(status, body) {
      // A request that joined another's execution is what that one was, and sent nothing upstream.
      if (leader?.description !== undefined && trace.description === undefined) trace.describe(leader.description);
      if (leader?.outcome !== undefined) trace.conclude({ ...leader.outcome, actual: 0 });
      if (status >= 400 && trace.outcome === undefined) {
        const code = body === undefined ? undefined : /"code":"([A-Z_]{1,64})"/.exec(body)?.[1];
        if (code !== undefined) trace.conclude({ code });
      }
    },
    end(status) {
      if (status >= 400 && trace.outcome === undefined) trace.conclude({ code: `HTTP_${status}` });
      span.setAttribute('http.response.status_code', status);
      span.end();
    },
  };
  return trace;
}
