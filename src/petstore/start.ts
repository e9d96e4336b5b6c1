/** startPetstore(options) → { url, close }: the reference Pet Store on a port (0 = any free one). */

import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createPetstoreApp, type RequestRecord } from './app.js';
import { type KeySpec, PLANS, type PlanLimits, type PlanName } from './plans.js';
import { type Pet, PetCatalogue } from './store.js';

export interface PetstoreOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  readonly port?: number;
  readonly host?: string;
  /** API keys and their plans: a plan name, or custom limits (an enterprise contract). Default: one demo key on the free plan. */
  readonly keys?: Readonly<Record<string, PlanName | PlanLimits>> | ReadonlyMap<string, KeySpec>;
  /** Pets the store starts with; ids may be anything in int64, above 2^53 included. */
  readonly seed?: Iterable<Pet>;
  /** Window lengths in ms (default one minute and one day), so tests can run a day in seconds. */
  readonly minuteMs?: number;
  readonly dayMs?: number;
  readonly banThreshold?: number;
  readonly banMs?: number;
  /** Milliseconds since the epoch (default Date.now). */
  readonly now?: () => number;
  readonly maxBodyBytes?: number;
  /** Added before each answer, as a distant or busy store would be. */
  readonly responseDelayMs?: number;
  /** How 429s write Retry-After: delay-seconds (default) or an HTTP-date. */
  readonly retryAfter?: 'delay-seconds' | 'http-date';
  readonly onRequest?: (record: RequestRecord) => void;
}

export interface PetstoreHandle {
  /** Base URL, ending in /v1 as the spec's base addresses do. */
  readonly url: string;
  readonly port: number;
  readonly catalogue: PetCatalogue;
  close(): Promise<void>;
}

export const DEMO_KEY = 'petstore-demo-key';

export async function startPetstore(options: PetstoreOptions = {}): Promise<PetstoreHandle> {
  const catalogue = new PetCatalogue(options.seed);
  const app = createPetstoreApp({
    keys: toKeyMap(options.keys ?? { [DEMO_KEY]: 'free' }),
    catalogue,
    now: options.now ?? Date.now,
    minuteMs: options.minuteMs ?? 60_000,
    dayMs: options.dayMs ?? 86_400_000,
    banThreshold: options.banThreshold ?? 10,
    banMs: options.banMs ?? 15 * 60_000,
    maxBodyBytes: options.maxBodyBytes ?? 16 * 1024,
    retryAfter: options.retryAfter,
    responseDelayMs: options.responseDelayMs,
    onRequest: options.onRequest,
  });
  const server = createServer(app);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => answerClientError(error, socket));
  await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/v1`,
    port,
    catalogue,
    close: () => closeServer(server),
  };
}

function toKeyMap(keys: NonNullable<PetstoreOptions['keys']>): ReadonlyMap<string, KeySpec> {
  if (keys instanceof Map) return keys;
  const entries = Object.entries(keys as Record<string, PlanName | PlanLimits>);
  return new Map(
    entries.map(([key, plan]) => [
      key,
      typeof plan === 'string' ? { plan, limits: PLANS[plan] } : { plan: 'enterprise', limits: plan },
    ]),
  );
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Idle keep-alive sockets would hold close() open until they time out.
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 1_000).unref();
  });
}

/** Malformed HTTP never reaches the handler; still answer with the spec's Error body, not Node's bare text. */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, reason] =
    error.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
  const body = JSON.stringify({ code: 'invalid_request', message: 'malformed HTTP request', status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
