/**
 * The REST client as a pipeline of small stages, each a function from the next stage to a send,
 * the way undici composes interceptors (`Dispatcher.compose`):
 *
 *   sharing → [tracing] → resend on reset → operation budget → limiter (budget, fair slots, pause check) → attempt
 *
 * (tracing only when a tracer is configured: a span per request that is really sent, below sharing.)
 * Each stage sees one upstream call and may pass it on, answer it itself, or fail it.
 */

import type { CancelSignal } from '../shared/cancel.js';
import type { Operation } from './operation.js';
import type { UpstreamResponse } from './response.js';

export type Route = 'listPets' | 'createPet' | 'getPet';

export interface UpstreamCall {
  readonly key: string;
  /** The key's digest: what every stage stores state under. */
  readonly keyId: string;
  readonly route: Route;
  readonly url: URL;
  /** The JSON body of a POST; undefined for a GET. */
  readonly body: string | undefined;
  readonly operation: Operation;
  /**
   * Aborted when nobody waits for the answer any more: the operation's client left (or, for a GET
   * shared by several operations, all of them did).
   */
  readonly signal: CancelSignal | undefined;
  /**
   * When the first attempt of this request was sent: a resend after a reset shares its deadline, so
   * one PETSTORE_TIMEOUT covers both (time spent waiting for budget before either does not count).
   */
  readonly firstAttempt?: { sentAt?: number };
  /** Set by the attempt stage once the request has been handed to a connection. */
  dispatched: boolean;
  /** The request's span, when tracing is on (tracing.ts): the stages below it tell it what happens. */
  readonly trace?: CallTrace | undefined;
}

/** What the stages below the tracing stage tell an upstream request's span. */
export interface CallTrace {
  /** W3C Trace Context headers naming the span, sent with every attempt. */
  readonly headers: Readonly<Record<string, string>>;
  /** An attempt was handed to a connection. */
  attempted(): void;
  /** Time spent waiting for the key's budget, its turn and a connection slot before an attempt. */
  waited(ms: number): void;
  /** The upstream answered 429: the key pauses for `ms`. */
  paused(ms: number): void;
  /** The connection was reset (`reason`, an error code): the GET is sent once more. */
  resent(reason: string): void;
}

export type Send = (call: UpstreamCall) => Promise<UpstreamResponse>;
export type Stage = (next: Send) => Send;

/** `stages` in order, ending in `last`. */
export function pipeline(stages: readonly Stage[], last: Send): Send {
  return stages.reduceRight<Send>((next, stage) => stage(next), last);
}

/** Whether a call is a write (POST): never resent, never shared, never cancelled once sent. */
export function isWrite(call: UpstreamCall): boolean {
  return call.body !== undefined;
}
