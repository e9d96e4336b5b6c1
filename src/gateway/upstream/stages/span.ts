/**
 * The tracing stage: one span (kind CLIENT) per upstream request, a child of its operation's span,
 * and its W3C `traceparent` sent with every attempt, so the upstream's own spans join the trace.
 * It sits right below sharing: a GET shared by several operations is one request and one span,
 * under the operation that sent it (the others note an event on their own span, sharing.ts); and
 * above resend, the operation's budget and the limiter, so the span covers all a request went
 * through: the wait for budget and a connection, each 429 pause (an event each), a resend after a
 * reset (an event), and every attempt.
 *
 * Named `GET /v1/pets/{petId}` (the route's template under the base path), with the HTTP semantic
 * conventions' attributes. Never the key, never a full URL: the span says which route, not which page.
 */

import { defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { CallTrace, Route, Stage } from '../pipeline.js';

const METHODS: Readonly<Record<Route, 'GET' | 'POST'>> = { listPets: 'GET', createPet: 'POST', getPet: 'GET' };

export function traceUpstream(tracer: Tracer): Stage {
  const propagator = new W3CTraceContextPropagator();
  return (next) => async (call) => {
    const method = METHODS[call.route];
    // `<base>/pets` as it is; `<base>/pets/{petId}` for a lookup, whose last segment is the id.
    const template = call.route === 'getPet' ? call.url.pathname.replace(/[^/]*$/, '{petId}') : call.url.pathname;
    const parent = call.operation.span === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, call.operation.span);
    const span = tracer.startSpan(
      `${method} ${template}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'url.template': template,
          'petstore.route': call.route,
          'server.address': call.url.hostname,
          'server.port': Number(call.url.port || (call.url.protocol === 'https:' ? 443 : 80)),
        },
      },
      parent,
    );
    const headers: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
    let attempts = 0;
    let waitedMs = 0;
    const recorder: CallTrace = {
      headers,
      attempted() {
        attempts++;
      },
      waited(ms) {
        waitedMs += ms;
      },
      paused(ms) {
        span.addEvent('429 pause', { 'petstore.pause_ms': Math.round(ms) });
      },
      resent(reason) {
        span.addEvent('resend after reset', { 'error.type': reason });
      },
    };
    const traced = { ...call, trace: recorder };
    try {
      const response = await next(traced);
      span.setAttribute('http.response.status_code', response.status);
      // HTTP semantic conventions: a 4xx or 5xx answer is an error of a client span.
      if (response.status >= 400) fail(String(response.status));
      return response;
    } catch (error) {
      fail(errorType(error));
      throw error;
    } finally {
      // The stages below worked on this copy; the caller's call learns whether it was sent.
      if (traced.dispatched) call.dispatched = true;
      span.setAttribute('petstore.attempts', attempts);
      if (attempts > 1) span.setAttribute('http.request.resend_count', attempts - 1);
      span.setAttribute('petstore.budget_wait_ms', Math.round(waitedMs * 10) / 10);
      span.end();
    }

    function fail(type: string): void {
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    }
  };
}

/** A low-cardinality name for what went wrong, never its message (which may name a URL). */
function errorType(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code)) return code;
  if (typeof name === 'string' && /^[A-Za-z]{1,64}$/.test(name)) return name;
  return '_OTHER';
}
