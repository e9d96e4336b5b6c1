/**
 * The last stage: one HTTP exchange on the undici pool, bounded in time and size. The time is
 * PETSTORE_TIMEOUT, cut short by the operation's answer deadline (and a resend's first attempt);
 * the size is undici's `maxResponseSize`, with a declared Content-Length over it refused before a
 * byte is read. A GET is cancelled when nobody waits for it any more; a POST that has been sent is
 * never cancelled by its client leaving: it runs to its answer, so its outcome is known and logged.
 */

import type { Dispatcher } from 'undici';
import { isWrite, type Route, type Send, type UpstreamCall } from './pipeline.js';
import type { UpstreamResponse } from './response.js';

/** Told of every upstream answer, for Prometheus metrics. */
export interface UpstreamObserver {
  response(route: Route, status: number, seconds: number): void;
  failure(route: Route, seconds: number): void;
  deprecated(endpoint: string): void;
}

export interface AttemptOptions {
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  /** Largest body read; the pool must have been made with the same `maxResponseSize`. */
  readonly maxBodyBytes: number;
  readonly now?: () => number;
  readonly observer?: UpstreamObserver;
  /** Every answer, for what the client notes of it (deprecation headers). */
  readonly onResponse?: (call: UpstreamCall, response: UpstreamResponse) => void;
}

/** The request was not sent: too little of its operation's time was left to wait for an answer. */
export class NotSentError extends Error {
  constructor() {
    super('the request was not sent: too little time was left to wait for its answer');
  }
}

/** A body over the cap, declared or read. */
export class BodyTooLargeError extends Error {
  readonly code = 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}

export function createAttempt(options: AttemptOptions): Send {
  const now = options.now ?? Date.now;
  return async (call) => {
    const { operation } = call;
    if (call.firstAttempt !== undefined) call.firstAttempt.sentAt ??= now();
    const firstSentAt = call.firstAttempt?.sentAt ?? now();
    const ms = Math.min(firstSentAt + options.timeoutMs, operation.answerBy) - now();
    // No time left for an answer: the request is not sent at all. A write needs at least half its
    // timeout ahead (a later create of a slow mutation): one cut short could create a pet whose
    // creation the client never learns of.
    if (ms <= 0 || (isWrite(call) && ms < options.timeoutMs / 2)) throw new NotSentError();
    const cancel = isWrite(call) ? undefined : call.signal;
    if (cancel?.aborted) throw cancel.reason;
    // One controller and one timer, not AbortSignal.timeout + AbortSignal.any: those cost a
    // measurable share of a request's CPU (each `any` registers weak listeners that outlive it).
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new DOMException('the upstream took too long', 'TimeoutError')),
      ms,
    );
    const onCancel = (): void => controller.abort(cancel?.reason);
    cancel?.addEventListener('abort', onCancel, { once: true });
    const settle = (): void => {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
    };
    const started = performance.now();
    let response: Dispatcher.ResponseData;
    try {
      call.dispatched = true;
      operation.sent++;
      call.trace?.attempted();
      response = await options.dispatcher.request({
        origin: call.url.origin,
        path: `${call.url.pathname}${call.url.search}`,
        method: isWrite(call) ? 'POST' : 'GET',
        headers: {
          authorization: `Bearer ${call.key}`,
          accept: 'application/json',
          ...(operation.requestId === undefined ? {} : { 'x-request-id': operation.requestId }),
          ...(isWrite(call) ? { 'content-type': 'application/json' } : {}),
          ...call.trace?.headers,
        },
        body: call.body,
        signal: controller.signal,
      });
    } catch (error) {
      settle();
      options.observer?.failure(call.route, (performance.now() - started) / 1000);
      throw error;
    }
    options.observer?.response(call.route, response.statusCode, (performance.now() - started) / 1000);
    if (Number(response.headers['content-length']) > options.maxBodyBytes) {
      // destroy() makes undici emit an error on the body, which nothing else listens to: without a
      // listener it would be uncaught.
      response.body.on('error', () => {}).destroy();
      settle();
      throw new BodyTooLargeError('the declared body is larger than allowed');
    }
    let body: string;
    try {
      body = await response.body.text();
    } finally {
      settle();
    }
    const answer = { status: response.statusCode, headers: response.headers, body };
    options.onResponse?.(call, answer);
    return answer;
  };
}
