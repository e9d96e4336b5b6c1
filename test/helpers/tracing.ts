/**
 * An OpenTelemetry tracer whose spans stay in memory (the SDK's own InMemorySpanExporter behind a
 * SimpleSpanProcessor, so a span is there as soon as it ends), and W3C `traceparent` values a
 * client would send, for the tracing tests.
 */

import { randomBytes } from 'node:crypto';
import type { Tracer } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface MemoryTracer {
  readonly tracer: Tracer;
  /** Every span that has ended, in the order they ended. */
  spans(): ReadableSpan[];
  /** Names of the spans started so far (ended or not): tells a test what is in flight. */
  readonly started: string[];
  reset(): void;
  close(): Promise<void>;
}

export function memoryTracer(): MemoryTracer {
  const exporter = new InMemorySpanExporter();
  const started: string[] = [];
  const noteStarts: SpanProcessor = {
    onStart: (span: Span) => void started.push(span.name),
    onEnd: () => {},
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const provider = new BasicTracerProvider({ spanProcessors: [noteStarts, new SimpleSpanProcessor(exporter)] });
  return {
    tracer: provider.getTracer('petstore-gateway-test'),
    spans: () => exporter.getFinishedSpans(),
    started,
    reset() {
      exporter.reset();
      started.length = 0;
    },
    close: () => provider.shutdown(),
  };
}

/** A client's span context: a new trace id and span id, sampled. */
export interface ClientSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceparent: string;
}

export function clientSpan(): ClientSpan {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** The trace id and parent span id of a W3C traceparent header. */
export function parseTraceparent(header: string | undefined): { traceId: string; parentId: string } | undefined {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(header ?? '');
  return match ? { traceId: match[1] as string, parentId: match[2] as string } : undefined;
}
