/**
 * The last stage: one HTTP exchange on the undici pool, bounded in time and size. The time is
 * PETSTORE_TIMEOUT, cut short by the operation's answer deadline (and a resend's first attempt);
 * the size is undici's `maxResponseSize`, with a declared Content-Length over it refused before a
 * byte is read. A GET is cancelled when nobody waits for it any more; a POST that has been sent is
 * never cancelled by its client leaving: it runs to its answer, so its outcome is known and logged.
 */

import type { Dispatcher } from 'undici';
import type { CancelSignal } from '../../shared/cancel.js';
import { isWrite, type Route, type Send, type UpstreamCall } from '../pipeline.js';
import type { UpstreamResponse } from '../response.js';

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

/** Whether an exchange failed for time: ours (PETSTORE_TIMEOUT), or undici's for the headers or the body. */
export function isTimeout(error: unknown): boolean {
  const { name, code } = (error ?? {}) as { name?: string; code?: string };
  return name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
}

/** A body over the cap, declared or read. */
export class BodyTooLargeError extends Error {
  readonly code = 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}

/** Failures of writes whose request had been handed to a connected socket: see `wasWritten`. */
const written = new WeakSet<object>();
/** Failures that came after the upstream's status and headers: see `cameAfterHeaders`. */
const afterHeaders = new WeakSet<object>();

/**
 * Whether an exchange failed after the upstream's status line and headers came (a body too slow,
 * cut off or too large): the upstream answered, so its silence is not what failed it.
 */
export function cameAfterHeaders(error: unknown): boolean {
  return typeof error === 'object' && error !== null && afterHeaders.has(error);
}

/**
 * Whether a write failed after its request was handed to a connected socket: undici calls
 * `onRequestStart` just before it writes the request there, and not at all for one refused a
 * connection, timed out while connecting or waiting for one, or stopped before. From then on the
 * upstream may have received and acted on it, whatever became of the answer: a POST's pet may exist.
 * Kept beside the error (never on the call, which later stages copy) so each attempt answers for itself.
 */
export function wasWritten(error: unknown): boolean {
  return typeof error === 'object' && error !== null && written.has(error);
}

export function createAttempt(options: AttemptOptions): Send {
  const now = options.now ?? Date.now;
  return (call) => {
    const { operation } = call;
    if (call.firstAttempt !== undefined) call.firstAttempt.sentAt ??= now();
    const firstSentAt = call.firstAttempt?.sentAt ?? now();
    const ms = Math.min(firstSentAt + options.timeoutMs, operation.answerBy) - now();
    // No time left for an answer: the request is not sent at all. A write needs at least half its
    // timeout ahead (a later create of a slow mutation): one cut short could create a pet whose
    // creation the client never learns of.
    if (ms <= 0 || (isWrite(call) && ms < options.timeoutMs / 2)) return Promise.reject(new NotSentError());
    const cancel = isWrite(call) ? undefined : call.signal;
    if (cancel?.aborted) return Promise.reject(cancel.reason);
    call.dispatched = true;
    operation.sent++;
    call.trace?.attempted();
    return new Promise<UpstreamResponse>((resolve, reject) => {
      exchange(call, ms, cancel, resolve, reject);
    });
  };

  /**
   * One exchange through undici's dispatch API, not `request()`: no AbortController, response
   * stream or body mixin per request. In a loop against a local server that cut 87-96 µs of CPU
   * per request (server included) to 60-69; the exchange is the same: the pool, its connections,
   * its size cap and its parser.
   */
  function exchange(
    call: UpstreamCall,
    ms: number,
    cancel: CancelSignal | undefined,
    resolve: (response: UpstreamResponse) => void,
    reject: (error: unknown) => void,
  ): void {
    const started = performance.now();
    let controller: Dispatcher.DispatchController | undefined;
    /** Why the exchange was stopped by us (time, the client leaving, a body too large), once it was. */
    let stopped: unknown;
    let headed: { status: number; headers: UpstreamResponse['headers'] } | undefined;
    const chunks: Buffer[] = [];
    let settled = false;
    const stop = (reason: unknown): void => {
      if (stopped !== undefined) return;
      stopped = reason ?? new DOMException('the request was cancelled', 'AbortError');
      // Before the connection took the request it is never written; rejected now all the same.
      if (controller !== undefined) controller.abort(stopped as Error);
      else fail(stopped);
    };
    const timer = setTimeout(() => stop(new DOMException('the upstream took too long', 'TimeoutError')), ms);
    const onCancel = (): void => stop(cancel?.reason);
    cancel?.addEventListener('abort', onCancel, { once: true });
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
      return true;
    };
    function fail(error: unknown): void {
      if (!finish()) return;
      if (controller !== undefined && isWrite(call) && typeof error === 'object' && error !== null) written.add(error);
      if (headed !== undefined && typeof error === 'object' && error !== null) afterHeaders.add(error);
      if (headed === undefined) options.observer?.failure(call.route, (performance.now() - started) / 1000);
      reject(error);
    }
    const { operation } = call;
    options.dispatcher.dispatch(
      {
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
      },
      {
        onRequestStart(taken) {
          controller = taken;
          if (stopped !== undefined) taken.abort(stopped as Error);
        },
        onResponseStart(_controller, statusCode, headers) {
          // 1xx answers are interim (RFC 9110 section 15.2): the final one follows.
          if (statusCode < 200) return;
          headed = { status: statusCode, headers: headers as UpstreamResponse['headers'] };
          options.observer?.response(call.route, statusCode, (performance.now() - started) / 1000);
          if (Number(headers['content-length']) > options.maxBodyBytes) {
            stop(new BodyTooLargeError('the declared body is larger than allowed'));
          }
        },
        onResponseData(_controller, chunk) {
          chunks.push(chunk);
        },
        onResponseEnd() {
          // Never left waiting: an end with no final answer before it is a failure.
          if (headed === undefined) return fail(new Error('the exchange ended without an answer'));
          if (!finish()) return;
          const answer = { status: headed.status, headers: headed.headers, body: decode(chunks) };
          options.onResponse?.(call, answer);
          resolve(answer);
        },
        onResponseError(_controller, error) {
          // Stopped by us: our reason, whatever undici makes of it.
          fail(stopped ?? error);
        },
      },
    );
  }
}

/** The body as text: UTF-8, without a byte order mark, as undici's `body.text()` reads it. */
function decode(chunks: readonly Buffer[]): string {
  const buffer = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  const bom = buffer.length > 2 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf;
  return buffer.toString('utf8', bom ? 3 : 0);
}
