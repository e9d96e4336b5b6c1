/**
 * A small Pet Store that misbehaves on purpose, for the gateway's budget-integrity tests: each test
 * picks how it answers (`behave`). Everything here is real HTTP on loopback; nothing is faked
 * inside the gateway. It records every request with the time it arrived and how many were in
 * flight at once, so a test can count exactly what the gateway sent and when.
 *
 * Pages are `GET /v1/pets?limit=L[&after=N]`; pet ids are 1, 2, 3… and a catalogue is endless
 * unless a behaviour ends it. Normal answers carry X-RateLimit-* for a generous window.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface HostileRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly at: number;
}

/** What the upstream does with one request; `page` is the page's position from its `after` parameter. */
export type Behaviour = (request: IncomingMessage, response: ServerResponse, context: BehaviourContext) => void;

export interface BehaviourContext {
  /** `after` of the request (0 for the first page). */
  readonly after: number;
  readonly limit: number;
  /** Index of this request, from 0. */
  readonly index: number;
  readonly origin: string;
}

export interface HostileUpstream {
  /** Base URL ending in /v1. */
  readonly url: string;
  readonly origin: string;
  readonly requests: HostileRequest[];
  /** The most requests that were in flight at once. */
  readonly maxConcurrent: number;
  /** Requests in flight now. */
  readonly inFlight: number;
  behave(behaviour: Behaviour): void;
  reset(): void;
  close(): Promise<void>;
}

/** X-RateLimit-* of a generous window, as a well-behaved upstream sends with every answer. */
export function quotaHeaders(remaining = 10_000, resetInSeconds = 60): Record<string, string> {
  return {
    'x-ratelimit-limit': '10000',
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + resetInSeconds),
  };
}

export function petJson(id: number): string {
  return `{"id":${id},"name":"Pet ${id}","categoryId":1,"status":"available"}`;
}

export interface AnswerOptions {
  /** Send X-RateLimit-* (default true). */
  readonly quota?: boolean;
  readonly headers?: Record<string, string>;
}

/** Writes a JSON answer with the given status, X-RateLimit-* of a generous window unless told not to. */
export function answer(response: ServerResponse, status: number, body: string, options: AnswerOptions = {}): void {
  if (response.destroyed) return;
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...(options.quota === false ? {} : quotaHeaders()),
    ...options.headers,
  });
  response.end(body);
}

/** A page of `count` pets from `after + 1`, with a rel="next" to `next` (a path and query) when given. */
export function page(
  response: ServerResponse,
  after: number,
  count: number,
  next: string | undefined,
  options: AnswerOptions = {},
): void {
  const pets = Array.from({ length: count }, (_, i) => petJson(after + i + 1)).join(',');
  const link: Record<string, string> = next === undefined ? {} : { link: `<${next}>; rel="next"` };
  answer(response, 200, `[${pets}]`, { ...options, headers: { ...link, ...options.headers } });
}

/** A well-behaved catalogue of `total` pets, paged as asked. */
export function catalogue(total: number): Behaviour {
  return (_request, response, { after, limit }) => {
    const count = Math.max(0, Math.min(limit, total - after));
    const next = after + count < total ? `/v1/pets?limit=${limit}&after=${after + count}` : undefined;
    page(response, after, count, next);
  };
}

export async function startHostileUpstream(initial: Behaviour = catalogue(10)): Promise<HostileUpstream> {
  let behaviour = initial;
  const requests: HostileRequest[] = [];
  let inFlight = 0;
  let maxConcurrent = 0;
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    inFlight++;
    maxConcurrent = Math.max(maxConcurrent, inFlight);
    response.once('close', () => inFlight--);
    const url = new URL(request.url ?? '/', 'http://upstream.invalid');
    const index = requests.length;
    requests.push({
      method: request.method ?? '',
      path: `${url.pathname}${url.search}`,
      authorization: request.headers.authorization,
      at: Date.now(),
    });
    request.resume();
    request.once('end', () => {
      behaviour(request, response, {
        after: Number(url.searchParams.get('after') ?? 0),
        limit: Number(url.searchParams.get('limit') ?? 20),
        index,
        origin,
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/v1`,
    origin,
    requests,
    get maxConcurrent() {
      return maxConcurrent;
    },
    get inFlight() {
      return inFlight;
    },
    behave(next) {
      behaviour = next;
    },
    reset() {
      requests.length = 0;
      maxConcurrent = inFlight;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
