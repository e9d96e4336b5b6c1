/**
 * Tracing as `npm start` runs it: the real entry point (`node --import tsx src/main.ts`, as the
 * start-up tests run it) with OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans over OTLP/HTTP to a
 * collector, here a node:http server on loopback that keeps what it is sent. The batch delay is
 * set longer than the test, so the spans arrive by the flush at SIGTERM, and the gateway still
 * exits 0.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { gql } from '../helpers/gql.js';
import { killTree, type Started, startUntil } from '../helpers/processes.js';
import { clientSpan } from '../helpers/tracing.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Export {
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: string;
}

/** An OTLP/HTTP collector that answers every export with success and keeps it. */
async function startCollector(): Promise<{ server: Server; url: string; exports: Export[] }> {
  const exports: Export[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      exports.push({ path: req.url ?? '', contentType: req.headers['content-type'], body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports };
}

interface OtlpSpan {
  readonly name: string;
  readonly traceId: string;
  readonly parentSpanId?: string;
}

/** Every span of OTLP/JSON export bodies, with the service.name of its resource. */
function spansOf(exports: readonly Export[]): (OtlpSpan & { service: unknown })[] {
  return exports.flatMap((sent) =>
    (JSON.parse(sent.body).resourceSpans as any[]).flatMap((resourceSpans) => {
      const service = resourceSpans.resource.attributes.find((a: any) => a.key === 'service.name')?.value.stringValue;
      return (resourceSpans.scopeSpans as any[]).flatMap((scope) =>
        (scope.spans as OtlpSpan[]).map((span) => ({ ...span, service })),
      );
    }),
  );
}

describe('npm start with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let started: Started | undefined;
  let collector: Server | undefined;

  afterEach(async () => {
    if (started !== undefined) await killTree(started.pid);
    started = undefined;
    await new Promise<void>((resolve) => (collector ? collector.close(() => resolve()) : resolve()));
    collector = undefined;
  });

  it('exports the spans of a request over OTLP/HTTP, the last batch flushed at SIGTERM', async () => {
    const otlp = await startCollector();
    collector = otlp.server;
    started = await startUntil(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: '0',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_SERVICE_NAME: 'gateway-under-test',
        OTEL_BSP_SCHEDULE_DELAY: '600000',
      },
      ready: /Pet Store GraphQL gateway ready at (\S+)/,
      timeoutMs: 30_000,
    });
    const client = clientSpan();
    const response = await gql(started.ready[1] as string, 'query Few { pets(first: 1) { nodes { id } } }', {
      headers: { traceparent: client.traceparent },
    });
    expect(response.status).toBe(200);
    expect(otlp.exports).toEqual([]);

    process.kill(started.pid, 'SIGTERM');
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.output()).toContain('Tracing: spans exported over OTLP/HTTP as service gateway-under-test');
    started = undefined;
    expect(otlp.exports.map((sent) => [sent.path, sent.contentType])).toEqual([['/v1/traces', 'application/json']]);
    const spans = spansOf(otlp.exports);
    expect(spans.map((span) => span.name).sort()).toEqual(['GET /v1/pets', 'query Few']);
    for (const span of spans) {
      expect(span.traceId).toBe(client.traceId);
      expect(span.service).toBe('gateway-under-test');
    }
    expect(spans.find((span) => span.name === 'query Few')?.parentSpanId).toBe(client.spanId);
  }, 60_000);
});
