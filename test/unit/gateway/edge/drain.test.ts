/**
 * The drain's bookkeeping of responses in flight (drain.ts), over real HTTP on loopback: responses
 * are kept in slots that are reused as requests finish, and every response not yet written when
 * the drain begins must still be found and sent with `Connection: close`, whichever slot it took.
 * The drain reports what it did (in flight at the signal, answered, cut at the grace period's end)
 * for the shutdown's log.
 */

import { createServer, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createDrain, type Drain } from '../../../../src/gateway/edge/drain.js';

interface Held {
  readonly server: ReturnType<typeof createServer>;
  readonly drain: Drain;
  readonly port: number;
  /** Responses the handler holds, by the request's path. */
  readonly waiting: Map<string, ServerResponse>;
  /** Resolves once a request for `path` is held. */
  arrived(path: string): Promise<ServerResponse>;
}

const sockets: Socket[] = [];
let held: Held | undefined;

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  if (held !== undefined) {
    held.server.closeAllConnections();
    await new Promise((resolve) => held?.server.close(resolve));
    held = undefined;
  }
});

/** A server that tracks every response with the drain and holds it until the test answers it. */
async function holdingServer(): Promise<Held> {
  const waiting = new Map<string, ServerResponse>();
  const listeners = new Map<string, (res: ServerResponse) => void>();
  const server = createServer((req, res) => {
    drain.track(res);
    const path = req.url ?? '/';
    waiting.set(path, res);
    listeners.get(path)?.(res);
  });
  const drain = createDrain(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const arrived = (path: string) =>
    new Promise<ServerResponse>((resolve) => {
      const res = waiting.get(path);
      if (res !== undefined) resolve(res);
      else listeners.set(path, resolve);
    });
  return { server, drain, port: address.port, waiting, arrived };
}

/** A keep-alive GET on a connection of its own; resolves with the response's head, lower-cased. */
function get(port: number, path: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: drain.test\r\n\r\n`);
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end >= 0) resolve(text.slice(0, end).toLowerCase());
    });
    socket.once('error', reject);
  });
}

const answer = (res: ServerResponse) => res.end('ok');

describe('createDrain', () => {
  it('finds every response still to be written when it begins, in freed slots and new ones alike', async () => {
    held = await holdingServer();
    const { port, drain } = held;
    // Three in flight, then the middle one answered: its slot is free for the next request.
    const first = get(port, '/first');
    const second = get(port, '/second');
    const third = get(port, '/third');
    answer(await held.arrived('/second'));
    expect(await second).not.toContain('connection: close');
    await Promise.all([held.arrived('/first'), held.arrived('/third')]);
    const fourth = get(port, '/fourth');
    const fifth = get(port, '/fifth');
    await Promise.all([held.arrived('/fourth'), held.arrived('/fifth')]);
    expect(drain.inFlight).toBe(4);

    const drained = drain.drain(10_000);
    expect(drain.draining).toBe(true);
    for (const path of ['/first', '/third', '/fourth', '/fifth']) answer(held.waiting.get(path) as ServerResponse);
    for (const head of await Promise.all([first, third, fourth, fifth])) {
      expect(head).toMatch(/^http\/1\.1 200/);
      expect(head).toContain('connection: close');
    }
    expect(await drained).toEqual({ inFlightAtSignal: 4, answered: 4, cut: 0, ms: expect.any(Number) });
    expect(drain.inFlight).toBe(0);
  });

  it('reports the requests still unanswered at the end of the grace period as cut, and closes them', async () => {
    held = await holdingServer();
    const { port, drain } = held;
    const answered = get(port, '/answered');
    void get(port, '/stuck').catch(() => {});
    const stuckClosed = new Promise((resolve) => sockets[1]?.once('close', resolve));
    await Promise.all([held.arrived('/answered'), held.arrived('/stuck')]);
    const drained = drain.drain(300);
    answer(held.waiting.get('/answered') as ServerResponse);
    await answered;
    const report = await drained;
    expect(report).toEqual({ inFlightAtSignal: 2, answered: 1, cut: 1, ms: expect.any(Number) });
    expect(report.ms).toBeGreaterThanOrEqual(300);
    await stuckClosed;
  });

  it('counts a response whose client left before its answer as no longer in flight', async () => {
    held = await holdingServer();
    const { port, drain } = held;
    void get(port, '/gone').catch(() => {});
    const res = await held.arrived('/gone');
    expect(drain.inFlight).toBe(1);
    const closed = new Promise((resolve) => res.once('close', resolve));
    sockets[0]?.destroy();
    await closed;
    expect(drain.inFlight).toBe(0);
    // The freed slot is taken again, and the drain still finds the response in it.
    const next = get(port, '/next');
    await held.arrived('/next');
    expect(drain.inFlight).toBe(1);
    const drained = drain.drain(10_000);
    answer(held.waiting.get('/next') as ServerResponse);
    expect(await next).toContain('connection: close');
    await drained;
  });
});
