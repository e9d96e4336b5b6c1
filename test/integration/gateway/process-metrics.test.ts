/**
 * /metrics carries the process's own health next to the gateway's metrics: prom-client's default
 * metrics (RSS, heap, event-loop lag, GC pauses), on the gateway's registry. Every metric of the
 * gateway's own is described in docs/operations.md. The accept queue is read from a gateway of its
 * own process, which the test stops (SIGSTOP) so that the kernel holds the connections it makes.
 */

import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PetstoreHandle, startPetstore } from '../../../src/petstore/start.js';
import { killTree, type Started, startUntil } from '../../helpers/processes.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

async function scrape(): Promise<string> {
  const response = await fetch(new URL('/metrics', stack.gateway.url));
  expect(response.status).toBe(200);
  return response.text();
}

/** The value of an unlabelled sample, or NaN when it is absent. */
function value(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

it('reports the process: resident memory, heap used, event-loop lag and GC pauses', async () => {
  expect((await stack.query('{ pets(first: 5) { nodes { id } } }')).body.errors).toBeUndefined();
  const text = await scrape();
  // Each present once, with a plausible value (a gateway uses tens of megabytes, at least).
  expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
  expect(value(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(1024 * 1024);
  expect(value(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  expect(text).toMatch(/^nodejs_heap_space_size_used_bytes\{space="old"\} \d+/m);
  expect(text).toMatch(/^# TYPE nodejs_gc_duration_seconds histogram$/m);
  for (const name of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
    expect(text.match(new RegExp(`^# TYPE ${name} `, 'gm'))).toHaveLength(1);
  }

  // A GC pause is recorded once one happens: make garbage until one is counted.
  const deadline = Date.now() + 10_000;
  let counted = 0;
  let garbage: unknown[] = [];
  while (counted === 0 && Date.now() < deadline) {
    for (let i = 0; i < 100_000; i++) garbage.push({ i });
    garbage = [];
    await new Promise((resolve) => setTimeout(resolve, 20));
    const matches = (await scrape()).matchAll(/^nodejs_gc_duration_seconds_count\{kind="\w+"\} (\d+)$/gm);
    counted = [...matches].reduce((sum, match) => sum + Number(match[1]), 0);
  }
  expect(counted).toBeGreaterThan(0);
});

it("names every one of the gateway's own metrics in docs/operations.md", async () => {
  const docs = await readFile(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
  const names = [...(await scrape()).matchAll(/^# TYPE ((?:graphql|petstore)_\w+) /gm)].map((match) => match[1]);
  expect(names.length).toBeGreaterThan(15);
  expect(names.filter((name) => !docs.includes(`\`${name}`))).toEqual([]);
});

describe('petstore_http_accept_queue', () => {
  const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
  const WAITING = 50;
  let store: PetstoreHandle;
  let gateway: Started | undefined;
  let port = 0;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    store = await startPetstore({ port: 0 });
    gateway = await startUntil(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', PETSTORE_BASE_URL: store.url, LOG_LEVEL: 'warn' },
      ready: /Pet Store GraphQL gateway ready at (\S+)/,
      timeoutMs: 60_000,
    });
    port = Number(new URL(gateway.ready[1] as string).port);
  }, 70_000);

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    // SIGKILL, which also ends a process a failed test left stopped.
    if (gateway) await killTree(gateway.pid);
    await store?.close();
  });

  /** A connection to the gateway, once the kernel has completed its handshake (accepted or not). */
  const open = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
      sockets.push(socket);
    });

  /** Writes a scrape on `socket` (kept open for the next) and resolves once its bytes are with the kernel. */
  const sendScrape = (socket: Socket) =>
    new Promise<void>((resolve, reject) =>
      socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', (error) => (error ? reject(error) : resolve())),
    );

  /** The next answer on `socket`, read to its Content-Length. */
  const answer = (socket: Socket) =>
    new Promise<string>((resolve, reject) => {
      let text = '';
      const onData = (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        const length = Number(/^content-length: (\d+)$/im.exec(text.slice(0, end))?.[1]);
        if (end !== -1 && text.length >= end + 4 + length) {
          socket.off('data', onData);
          resolve(text.slice(end + 4));
        }
      };
      socket.on('data', onData);
      socket.once('error', reject);
    });

  it('counts the connections the kernel holds until the gateway accepts them, and goes back to 0', async () => {
    const scraper = await open();
    // An answer on it: the gateway has accepted this connection, and the gauge is there.
    const first = answer(scraper);
    await sendScrape(scraper);
    expect(value(await first, 'petstore_http_accept_queue')).toBe(0);

    const pid = gateway?.pid ?? 0;
    process.kill(pid, 'SIGSTOP');
    let stopped = true;
    try {
      // A stopped process accepts nothing; the kernel completes each handshake and queues it.
      await Promise.all(Array.from({ length: WAITING }, open));
      const second = answer(scraper);
      await sendScrape(scraper);
      process.kill(pid, 'SIGCONT');
      stopped = false;
      // Node accepts one connection per turn of its event loop, and the scrape is answered in one
      // of the first turns after the process runs again: nearly all 50 are still waiting.
      const waiting = value(await second, 'petstore_http_accept_queue');
      expect(waiting).toBeGreaterThanOrEqual(WAITING - 10);
      expect(waiting).toBeLessThanOrEqual(WAITING);
    } finally {
      if (stopped) process.kill(pid, 'SIGCONT');
    }

    // Accepted one by one once the gateway runs: a reading, not a count.
    const deadline = Date.now() + 10_000;
    let left = Number.NaN;
    while (left !== 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const next = answer(scraper);
      await sendScrape(scraper);
      left = value(await next, 'petstore_http_accept_queue');
    }
    expect(left).toBe(0);
  });
});
