/**
 * The network between one gateway replica and the simulated upstream, on the virtual clock: what
 * undici's Pool is to the real REST client (the same `dispatch` API, so the client's own attempt
 * stage runs unchanged). Faked because a network with seconds of latency and jitter cannot run in
 * virtual time. A request is written when dispatched (`onRequestStart`), reaches the upstream a
 * one-way latency later whatever happens to its answer (bytes written are sent), and its answer
 * comes back another latency later unless the client gave up on it first.
 */

import type { Dispatcher } from 'undici';
import type { SimUpstream } from './sim-upstream.js';

/** A seeded PRNG (mulberry32): the same seed gives the same jitter, so a schedule replays exactly. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Handler = Dispatcher.DispatchHandler;

export function simDispatcher(upstream: SimUpstream, random: () => number): Dispatcher {
  const { latencyMs, jitterMs } = upstream.rules;
  const latency = () => Math.max(1, Math.round(latencyMs + (random() * 2 - 1) * jitterMs));
  const dispatcher = {
    dispatch(options: Dispatcher.DispatchOptions, handler: Handler): boolean {
      const headers = options.headers as Record<string, string>;
      const key = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1] ?? '';
      const op = headers['x-request-id'] ?? '';
      let settled = false;
      const flight = { key, from: Date.now(), to: undefined as number | undefined };
      upstream.flights.push(flight);
      const controller = {
        aborted: false,
        paused: false,
        reason: null as Error | null,
        abort(reason: Error) {
          if (settled) return;
          settled = true;
          flight.to = Date.now();
          controller.aborted = true;
          controller.reason = reason;
          handler.onResponseError?.(controller as unknown as Dispatcher.DispatchController, reason);
        },
        pause() {},
        resume() {},
      };
      const sentAt = Date.now();
      handler.onRequestStart?.(controller as unknown as Dispatcher.DispatchController, {});
      setTimeout(() => {
        const method = options.method === 'POST' ? 'POST' : 'GET';
        const body = typeof options.body === 'string' ? options.body : undefined;
        const response = upstream.receive({ method, key, op, body, sentAt });
        if (response === undefined) return;
        setTimeout(() => {
          if (settled) return;
          settled = true;
          flight.to = Date.now();
          const typed = controller as unknown as Dispatcher.DispatchController;
          handler.onResponseStart?.(typed, response.status, response.headers, '');
          handler.onResponseData?.(typed, Buffer.from(response.body));
          handler.onResponseEnd?.(typed, {});
        }, latency());
      }, latency());
      return true;
    },
    close: () => Promise.resolve(),
    destroy: () => Promise.resolve(),
  };
  return dispatcher as unknown as Dispatcher;
}
