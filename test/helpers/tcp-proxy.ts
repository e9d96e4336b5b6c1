/**
 * A plain TCP proxy on loopback, for a network partition between one client and a server that other
 * clients still reach directly (a gateway replica cut off from Redis while another is not). Nothing
 * of the server is faked: bytes are forwarded both ways as they come. `cut()` drops every open
 * connection and stops listening, so the client sees its connection close and reconnects refused,
 * as it would across a partition that outlasts TCP's patience; `heal()` listens again on the same port.
 */

import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  heal(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const host = target.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host, port: target.port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', closeBoth);
    upstream.on('error', closeBoth);
    client.once('close', closeBoth);
    upstream.once('close', closeBoth);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  await listen(0);
  const { port } = server.address() as { port: number };
  return {
    port,
    cut: stop,
    heal: () => listen(port),
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
