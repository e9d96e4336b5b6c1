/**
 * discardBody over real loopback HTTP: it waits for the end of a body it drops, and not past its
 * bounds (a body declared larger than maxBytes, more than maxBytes sent, a client that stalls for
 * maxMs). The limits are made small so each case takes milliseconds.
 */

import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { discardBody } from '../../src/discard-body.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server that discards every body within `limits`, and reports how the request stood then. */
async function discarding(limits: {
  maxBytes: number;
  maxMs: number;
}): Promise<{ port: number; next: Promise<{ complete: boolean }> }> {
  let report: (value: { complete: boolean }) => void = () => {};
  const next = new Promise<{ complete: boolean }>((resolve) => {
    report = resolve;
  });
  server = createServer((req: IncomingMessage, res) => {
    void discardBody(req, limits).then(() => {
      report({ complete: req.complete });
      res.writeHead(413, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, next };
}

/** Sends a POST head declaring `length`, then `sent` bytes of body, and keeps the socket open. */
function send(port: number, length: number, sent: number) {
  const socket = connect({ port, host: '127.0.0.1' });
  socket.on('error', () => {});
  socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`);
  if (sent > 0) socket.write(Buffer.alloc(sent, 'a'));
  return socket;
}

describe('discardBody', () => {
  it('reads a body to its end before it resolves', async () => {
    const { port, next } = await discarding({ maxBytes: 1_000_000, maxMs: 60_000 });
    const socket = send(port, 300_000, 300_000);
    expect(await next).toEqual({ complete: true });
    socket.destroy();
  });

  it('resolves at once for a body declared larger than maxBytes', async () => {
    const { port, next } = await discarding({ maxBytes: 1_000, maxMs: 60_000 });
    const socket = send(port, 1_001, 10);
    expect(await next).toEqual({ complete: false });
    socket.destroy();
  });

  it('stops once more than maxBytes has arrived of a body that declares no length', async () => {
    const { port, next } = await discarding({ maxBytes: 100_000, maxMs: 60_000 });
    const socket = connect({ port, host: '127.0.0.1' });
    socket.on('error', () => {});
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
    // Two chunks of 60,000 and no last chunk: the body never ends.
    for (let i = 0; i < 2; i++) socket.write(`${(60_000).toString(16)}\r\n${'a'.repeat(60_000)}\r\n`);
    expect(await next).toEqual({ complete: false });
    socket.destroy();
  });

  it('stops after maxMs of a client that stalls mid-body', async () => {
    const { port, next } = await discarding({ maxBytes: 1_000_000, maxMs: 50 });
    const socket = send(port, 500_000, 1_000);
    expect(await next).toEqual({ complete: false });
    socket.destroy();
  });
});
