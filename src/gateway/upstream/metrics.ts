/** The upstream layer's events, counted in the gateway's Prometheus metrics (observability/metrics.ts). */

import type { Metrics } from '../observability/metrics.js';
import type { LimiterEvent } from './limits/limiter.js';
import type { UpstreamObserver } from './stages/attempt.js';

export function recordLimiterEvent(metrics: Metrics, event: LimiterEvent): void {
  switch (event.type) {
    case 'throttled':
      metrics.throttled.inc();
      return;
    case 'heldBack':
      metrics.bansAvoided.inc();
      return;
    case 'rejected':
      metrics.rejected.inc({ reason: event.reason });
      return;
    case 'upstream429':
      metrics.upstream429.inc();
      return;
    case 'clamped':
      metrics.clamped.inc({ header: event.header });
      return;
    case 'bottleneckError':
      return;
  }
}

export function upstreamObserver(metrics: Metrics): UpstreamObserver {
  return {
    response(route, status, seconds) {
      metrics.upstreamRequests.inc({ route, status: String(status) });
      metrics.upstreamDuration.observe({ route }, seconds);
    },
    failure(route, seconds) {
      metrics.upstreamRequests.inc({ route, status: 'error' });
      metrics.upstreamDuration.observe({ route }, seconds);
    },
    deprecated(endpoint) {
      metrics.deprecatedCalls.inc({ endpoint });
    },
  };
}
