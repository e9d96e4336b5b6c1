/**
 * Making every upstream request count. Identical GETs in flight for the same key share one request
 * (across GraphQL requests, never across keys); a per-key cache serves repeats for
 * PETSTORE_CACHE_TTL; and when a GET fails for want of budget or of the upstream (RATE_LIMITED, a
 * timeout, a reset, a 5xx), the key's answer to the same request, if younger than
 * PETSTORE_STALE_TTL, is served instead and marked stale. A write for a key (createPet) gives the
 * key a new write generation (answers.ts), which fences its cached and stale answers on every
 * replica, and drops its in-flight GETs here; a GET in flight is joined only by a read of the same
 * generation. So a read that starts after a write never sees the world before it. A shared GET is
 * cancelled only when every operation waiting for it has gone.
 */

import { Cancellation, type CancelSignal, untilAborted } from '../../shared/cancel.js';
import { InFlight } from '../../shared/in-flight.js';
import { UpstreamError } from '../errors.js';
import { isWrite, type Stage, type UpstreamCall } from '../pipeline.js';
import type { Generation, UpstreamResponse } from '../response.js';
import { type AnswerStore, memoryAnswers, type StoredAnswer } from './answers.js';

export interface ResponseSharing {
  readonly stage: Stage;
  /** Forgets everything shared for a key (by digest), after a write. */
  invalidate(keyId: string): Promise<void>;
  /** The key's write generation now (0 when no answers are kept): what is learned under another is out of date. */
  generation(keyId: string): Promise<Generation>;
  close(): Promise<void>;
}

export interface SharingOptions {
  /** How long a 200 answer is served again; 0 turns the cache off (coalescing stays). */
  readonly ttlMs: number;
  /** How old an answer may be served instead of an error; 0 (default) never. */
  readonly staleTtlMs?: number;
  /** Join identical GETs in flight (default true). */
  readonly coalesce?: boolean;
  /** Where answers are kept (default: in process, 32 MiB at most). */
  readonly answers?: AnswerStore;
  readonly now?: () => number;
  readonly onCoalesced?: () => void;
  readonly onCacheHit?: () => void;
  readonly onStale?: () => void;
  /** Told of every key whose shared reads a write ended (GraphQL executions are shared too). */
  readonly onInvalidate?: (keyId: string) => void;
}

interface Shared {
  readonly response: Promise<UpstreamResponse>;
  readonly controller: Cancellation;
  /** Operations still waiting for it; at 0 the request is cancelled. */
  waiting: number;
  /** The key's generation when it was sent (undefined with nothing kept): a read of another does not join it. */
  readonly generation: Generation | undefined;
}

export function createResponseSharing(options: SharingOptions): ResponseSharing {
  const now = options.now ?? Date.now;
  const staleTtlMs = options.staleTtlMs ?? 0;
  const keepMs = Math.max(options.ttlMs, staleTtlMs);
  const answers = options.answers ?? memoryAnswers();
  const inFlight = new InFlight<Shared>();

  /** The shared answer, as one operation waits for it: it stops waiting (and counts out) when its client leaves. */
  function wait(shared: Shared, call: UpstreamCall): Promise<UpstreamResponse> {
    shared.waiting++;
    const { signal } = call;
    if (signal === undefined) return shared.response;
    return untilAborted(shared.response, signal, () => {
      if (--shared.waiting === 0) shared.controller.abort(signal.reason);
    });
  }

  /** A failure an earlier answer may stand in for: no budget in time, or the upstream not answering. */
  function standsIn(failure: { error: unknown } | { response: UpstreamResponse }, call: UpstreamCall): boolean {
    if (call.operation.signal?.aborted) return false;
    if ('response' in failure) return failure.response.status >= 500;
    const code = failure.error instanceof UpstreamError ? failure.error.code : undefined;
    return code === undefined || code === 'RATE_LIMITED' || code === 'UNAVAILABLE';
  }

  /** An earlier answer standing in for `call`'s, marked with its age. */
  function served(answer: StoredAnswer, call: UpstreamCall): UpstreamResponse {
    options.onStale?.();
    call.operation.span?.addEvent('served stale answer', {
      'petstore.route': call.route,
      'petstore.age_ms': Math.max(0, now() - answer.at),
    });
    return { ...answer.response, staleMs: Math.max(0, now() - answer.at) };
  }

  /** The upstream's answer, or, when it fails as `standsIn` says, the stored one marked with its age. */
  async function fetch(
    next: (call: UpstreamCall) => Promise<UpstreamResponse>,
    call: UpstreamCall,
    signal: CancelSignal,
    stored: StoredAnswer | undefined,
    generation: Generation,
  ): Promise<UpstreamResponse> {
    const stale = stored !== undefined && now() - stored.at <= staleTtlMs ? stored : undefined;
    let response: UpstreamResponse;
    try {
      response = await next({ ...call, signal });
    } catch (error) {
      if (stale !== undefined && standsIn({ error }, call)) return served(stale, call);
      throw error;
    }
    if (response.status === 200) {
      // Kept whatever happens to the store: an answer not kept is only an answer not shared.
      answers.set(call.keyId, call.url.href, { response, at: now() }, keepMs, generation).catch(() => {});
      // Its readers learn from it (the lookups' pet memory) under the generation it was asked under.
      return { ...response, generation };
    }
    if (stale !== undefined && standsIn({ response }, call)) {
      return served(stale, call);
    }
    return response;
  }

  /** A GET: from the cache when it is on, else joined to the same GET in flight, else sent as one others may join. */
  function read(next: (call: UpstreamCall) => Promise<UpstreamResponse>, call: UpstreamCall) {
    // Not an async function on the common path: each async layer costs a promise and a tick per request.
    return keepMs > 0 ? readKept(next, call) : share(next, call, undefined, undefined);
  }

  async function readKept(next: (call: UpstreamCall) => Promise<UpstreamResponse>, call: UpstreamCall) {
    const { stored, generation } = await answers.read(call.keyId, call.url.href);
    if (stored !== undefined && now() - stored.at <= options.ttlMs) {
      options.onCacheHit?.();
      call.operation.span?.addEvent('answered from cache', { 'petstore.route': call.route });
      return stored.response;
    }
    return share(next, call, stored, generation);
  }

  function share(
    next: (call: UpstreamCall) => Promise<UpstreamResponse>,
    call: UpstreamCall,
    stored: StoredAnswer | undefined,
    generation: Generation | undefined,
  ): Promise<UpstreamResponse> {
    const id = `${call.keyId} ${call.url.href}`;
    const joined = options.coalesce === false ? undefined : inFlight.get(id);
    // Sent under another generation (before a write another replica made, or after one): not this read's answer.
    if (joined !== undefined && joined.generation === generation) {
      options.onCoalesced?.();
      // The request and its span belong to the operation that sent it; this one only waits for its answer.
      call.operation.span?.addEvent('joined in-flight request', { 'petstore.route': call.route });
      return wait(joined, call);
    }
    const controller = new Cancellation();
    const shared: Shared = {
      controller,
      waiting: 0,
      generation,
      // With nothing kept, no earlier answer can stand in and none is to be stored: the upstream's is the answer.
      response:
        generation === undefined
          ? next({ ...call, signal: controller })
          : fetch(next, call, controller, stored, generation),
    };
    inFlight.set(id, shared);
    const settle = () => {
      if (inFlight.get(id) === shared) inFlight.delete(id);
    };
    shared.response.then(settle, settle);
    return wait(shared, call);
  }

  async function write(next: (call: UpstreamCall) => Promise<UpstreamResponse>, call: UpstreamCall) {
    try {
      return await next(call);
    } finally {
      // Whatever the outcome, the key's shared reads may now describe the catalogue before this write.
      await invalidate(call.keyId);
    }
  }

  async function invalidate(keyId: string): Promise<void> {
    options.onInvalidate?.(keyId);
    const prefix = `${keyId} `;
    inFlight.deleteWhere((id) => id.startsWith(prefix));
    await answers.invalidate(keyId).catch(() => {});
  }

  return {
    stage: (next) => (call) => (isWrite(call) ? write(next, call) : read(next, call)),
    invalidate,
    generation: (keyId) => (keepMs > 0 ? answers.generation(keyId) : Promise.resolve(0)),
    close: () => answers.close(),
  };
}
