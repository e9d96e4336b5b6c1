/** An upstream call as the REST client makes one (a GET of one page), for unit tests of the upstream stages. */

import { createLogger } from '../../src/gateway/observability/logger.js';
import { createOperation } from '../../src/gateway/upstream/operation.js';
import type { UpstreamCall } from '../../src/gateway/upstream/pipeline.js';

export function upstreamCall(overrides: Partial<UpstreamCall> = {}): UpstreamCall {
  const operation = createOperation({ logger: createLogger('silent'), maxWaitMs: 1_000, timeoutMs: 1_000 });
  return {
    key: 'k',
    keyId: 'kid',
    route: 'listPets',
    url: new URL('http://store.test/v1/pets?limit=1'),
    body: undefined,
    operation,
    signal: undefined,
    dispatched: false,
    ...overrides,
  };
}
