/**
 * A fault-injecting TCP proxy (node:net) between the gateway and an HTTP upstream, for the faults
 * that cannot be produced for real by a well-behaved server: a connection reset in the middle of a
 * body, a body cut short by a clean close, a server that closes each keep-alive socket right after
 * its response, latency on the wire, and a port that stops listening. Everything that a real server
 * can do (5xx, bodies that are not JSON, oversized bodies, a store that stops and comes back) is
 * done for real by a real server; this fakes only the rest.
 *
 * Faults apply to responses (the upstream → client direction); requests are forwarded untouched, so
 * the upstream really receives and processes every request that reached it. Responses are framed by
 * Content-Length or chunked encoding, which is all the upstreams under test send.
 */

import { connect, createServer, type Server, type Socket } from 'node:net';

export type FaultMode =
  /** Forward every byte as it comes. */
  | 'pass'
  /** Delay every chunk of the response by `latencyMs`. */
  | 'latency'
  /** Forward the response head and part of the body, then reset the client socket (RST). */
  | 'reset-mid-body'
  /** Forward the response head and part of the body, then close the client socket cleanly (FIN). */
  | 'truncate-body'
  /** Forward the whole response, then close the client socket: a server closing keep-alive sockets between requests. */
  | 'close-after-response'
  /**
   * Reset a kept-alive connection when the next request arrives on it, and forward nothing: the race
   * of a server closing an idle socket just as the client sends on it. The upstream never sees the request.
   */
  | 'reset-reused';

export interface FaultOptions {
  /** For 'latency'. */
  readonly latencyMs?: number;
  /** Apply the fault to the next `times` responses only, then pass through. Default: until changed. */
  readonly times?: number;
}

export interface ProxyStats {
  /** Connections accepted since start (or since `resetStats`). */
  opened: number;
  /** Connections open now. */
  open: number;
  /** Responses a fault was applied to. */
  faulted: number;
}

export interface FaultProxy {
  readonly port: number;
  /** http://127.0.0.1:port */
  readonly origin: string;
  readonly stats: Readonly<ProxyStats>;
  /** Switches the fault applied to responses whose head arrives from now on. */
  set(mode: FaultMode, options?: FaultOptions): void;
  /** Whether it accepts connections (false after `refuse`). */
  readonly listening: boolean;
  /** Stops listening and drops every open connection: new connections are refused. */
  refuse(): Promise<void>;
  /** Listens again on the same port. */
  accept(): Promise<void>;
  resetStats(): void;
  close(): Promise<void>;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CHUNKED_END = Buffer.from('\r\n0\r\n\r\n');

export async function startFaultProxy(target: { host?: string; port: number }): Promise<FaultProxy> {
  const host = target.host ?? '127.0.0.1';
  let mode: FaultMode = 'pass';
  let latencyMs = 0;
  let remainingTimes = Number.POSITIVE_INFINITY;
  const stats: ProxyStats = { opened: 0, open: 0, faulted: 0 };
  const sockets = new Set<Socket>();

  /** The fault for a response whose head just arrived, or for a request on a reused connection; consumes one of `times`. */
  function takeFault(side: 'request' | 'response'): FaultMode {
    if (mode === 'pass' || (mode === 'reset-reused') !== (side === 'request')) return 'pass';
    if (remainingTimes <= 0) return 'pass';
    remainingTimes--;
    stats.faulted++;
    return mode;
  }

  function onConnection(client: Socket): void {
    stats.opened++;
    stats.open++;
    sockets.add(client);
    const upstream = connect({ host, port: target.port });
    sockets.add(upstream);
    let closed = false;
    const closeBoth = () => {
      if (closed) return;
      closed = true;
      stats.open--;
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', closeBoth);
    client.on('close', closeBoth);
    // Nothing listens behind the proxy: the client sees its connection reset, as a dead backend behind a balancer looks.
    upstream.on('error', () => {
      if (!client.destroyed) client.resetAndDestroy();
      closeBoth();
    });
    upstream.on('close', () => {
      if (!client.destroyed) client.end();
    });
    // True between a complete response and the next request: the connection is idle and kept alive.
    let idle = false;
    client.on('data', (chunk: Buffer) => {
      if (idle && takeFault('request') === 'reset-reused') {
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      idle = false;
      if (!upstream.destroyed) upstream.write(chunk);
    });
    client.on('end', () => upstream.end());

    const responses = createResponseFramer();
    upstream.on('data', (chunk: Buffer) => {
      for (const piece of responses.push(chunk)) forward(piece);
    });

    function forward(piece: Piece): void {
      const { fault } = piece;
      if (piece.last) idle = true;
      if (fault === 'pass' || fault === 'close-after-response') {
        write(piece.data, 0);
        if (piece.last && fault === 'close-after-response') {
          client.end();
          upstream.end();
        }
      } else if (fault === 'latency') {
        write(piece.data, latencyMs);
      } else if (piece.cut) {
        write(piece.data, 0);
        if (fault === 'reset-mid-body') client.resetAndDestroy();
        else client.end();
        upstream.destroy();
      }
    }

    function write(data: Buffer, delayMs: number): void {
      if (data.length === 0) return;
      if (delayMs <= 0) {
        if (!client.destroyed && client.writable) client.write(data);
        return;
      }
      // Timers of one duration fire in the order they were set, so chunks keep their order.
      setTimeout(() => {
        if (!client.destroyed && client.writable) client.write(data);
      }, delayMs);
    }

    /** Splits the upstream's byte stream into responses, and decides each response's fault from its head. */
    function createResponseFramer() {
      let buffer = Buffer.alloc(0);
      let state: 'head' | 'body' | 'dropped' = 'head';
      let fault: FaultMode = 'pass';
      let bodyLeft = 0; // Content-Length bytes still to come; -1 for chunked
      let chunkedTail = Buffer.alloc(0);
      let heldHead = Buffer.alloc(0);
      return {
        push(chunk: Buffer): Piece[] {
          if (state === 'dropped') return [];
          buffer = Buffer.concat([buffer, chunk]);
          const pieces: Piece[] = [];
          for (;;) {
            if (state === 'head') {
              const end = buffer.indexOf(HEAD_END);
              if (end < 0) return pieces;
              const head = buffer.subarray(0, end + HEAD_END.length);
              buffer = buffer.subarray(head.length);
              const text = head.toString('latin1');
              const length = /\r\ncontent-length:\s*(\d+)/i.exec(text);
              bodyLeft = /\r\ntransfer-encoding:[^\r]*chunked/i.test(text) ? -1 : Number(length?.[1] ?? 0);
              fault = takeFault('response');
              state = 'body';
              if (fault === 'reset-mid-body' || fault === 'truncate-body') heldHead = head;
              else pieces.push({ fault, data: head, last: bodyLeft === 0, cut: false });
              if (bodyLeft === 0 && heldHead.length === 0) {
                state = 'head';
                continue;
              }
            }
            if (fault === 'reset-mid-body' || fault === 'truncate-body') {
              // Wait for at least two body bytes (or the whole of a shorter body), then send half of what came.
              const want = bodyLeft < 0 ? 2 : Math.min(2, bodyLeft);
              if (buffer.length < want) return pieces;
              const part = buffer.subarray(0, Math.max(want === 2 ? 1 : 0, Math.floor(buffer.length / 2)));
              pieces.push({ fault, data: Buffer.concat([heldHead, part]), last: true, cut: true });
              state = 'dropped';
              buffer = Buffer.alloc(0);
              return pieces;
            }
            if (buffer.length === 0) return pieces;
            if (bodyLeft >= 0) {
              const take = buffer.subarray(0, bodyLeft);
              buffer = buffer.subarray(take.length);
              bodyLeft -= take.length;
              pieces.push({ fault, data: take, last: bodyLeft === 0, cut: false });
              if (bodyLeft > 0) return pieces;
            } else {
              // Chunked: the response ends with the zero-size chunk (no trailers from our upstreams).
              const seen = Buffer.concat([chunkedTail, buffer]);
              const end = seen.indexOf(CHUNKED_END);
              if (end < 0) {
                pieces.push({ fault, data: buffer, last: false, cut: false });
                chunkedTail = seen.subarray(Math.max(0, seen.length - CHUNKED_END.length));
                buffer = Buffer.alloc(0);
                return pieces;
              }
              const upTo = end + CHUNKED_END.length - chunkedTail.length;
              pieces.push({ fault, data: buffer.subarray(0, upTo), last: true, cut: false });
              buffer = buffer.subarray(upTo);
              chunkedTail = Buffer.alloc(0);
            }
            state = 'head';
          }
        },
      };
    }
  }

  const server: Server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  function dropAll(): void {
    for (const socket of sockets) socket.destroy();
  }

  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    stats,
    get listening() {
      return server.listening;
    },
    set(next, options = {}) {
      mode = next;
      latencyMs = options.latencyMs ?? 0;
      remainingTimes = options.times ?? Number.POSITIVE_INFINITY;
    },
    async refuse() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        dropAll();
      });
    },
    async accept() {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
    },
    resetStats() {
      stats.opened = 0;
      stats.faulted = 0;
    },
    async close() {
      await new Promise<void>((resolve) => {
        if (!server.listening) resolve();
        else server.close(() => resolve());
        dropAll();
      });
    },
  };
}

interface Piece {
  readonly fault: FaultMode;
  readonly data: Buffer;
  /** The last bytes of the response. */
  readonly last: boolean;
  /** A reset or truncation follows these bytes. */
  readonly cut: boolean;
}
