/**
 * Reading the rest of a request body that will not be used (it is too large), before it is
 * answered with a 413 and its connection closed. Used by the gateway and the reference store alike.
 *
 * A server that closes a connection while the client's bytes are still arriving makes its TCP stack
 * answer them with a reset, and a reset can discard the response before the client has read it:
 * a 413 for a 5 MB body reached the client as EPIPE or ECONNRESET in 10 of 40 runs on loopback.
 * RFC 9112 section 9.6 asks a server for a staged close instead. Node's http server closes the
 * socket of a `Connection: close` response as soon as the response is written, so the staging is
 * done before it: the body is read to its end, each chunk dropped as it arrives, up to a bound in
 * bytes and time; past the bound the connection is closed regardless (a client that sends that
 * much after its limit is not one to wait for).
 */

import type { IncomingMessage } from 'node:http';

export interface DiscardLimits {
  /** Bytes read and dropped at most; a larger body is answered without waiting for it. */
  readonly maxBytes: number;
  /** Longest the rest of a body is waited for. */
  readonly maxMs: number;
}

export const DISCARD_LIMITS: DiscardLimits = Object.freeze({ maxBytes: 64 * 1024 * 1024, maxMs: 5_000 });

/**
 * Resolves once the request body has ended (or the client has gone, or a bound is reached), so
 * that an answer sent with `Connection: close` after it is read by the client, not reset.
 * Call it after removing the caller's own 'data' listener: what is read from here on is dropped.
 */
export function discardBody(req: IncomingMessage, limits: DiscardLimits = DISCARD_LIMITS): Promise<void> {
  if (req.complete || req.destroyed || Number(req.headers['content-length']) > limits.maxBytes) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    let dropped = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', done);
      req.off('close', done);
      req.off('error', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > limits.maxBytes) done();
    };
    const timer = setTimeout(done, limits.maxMs);
    req.on('data', onData);
    req.on('end', done);
    req.on('close', done);
    req.on('error', done);
    req.resume();
  });
}
