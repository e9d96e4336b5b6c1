/**
 * A reference Pet Store and a gateway in front of it, both on port 0, with every upstream request
 * recorded at the store so tests can count what a GraphQL operation cost.
 */

import { type Config, parseConfig } from '../../src/config.js';
import { createGateway, type GatewayHandle, type GatewayOptions } from '../../src/gateway/server.js';
import type { RequestRecord } from '../../src/petstore/app.js';
import { type PetstoreHandle, type PetstoreOptions, startPetstore } from '../../src/petstore/start.js';
import { type GqlOptions, type GqlResponse, gql } from './gql.js';

export const TEST_KEY = 'test-key-0123456789';

export interface Stack {
  readonly store: PetstoreHandle;
  readonly gateway: GatewayHandle;
  readonly config: Config;
  /** Every request the store answered, in order. */
  readonly requests: RequestRecord[];
  /** Requests the store answered for an operation (all when none is named). */
  count(operation?: RequestRecord['operation']): number;
  query<T = Record<string, any>>(query: string, options?: GqlOptions): Promise<GqlResponse<T>>;
  close(): Promise<void>;
}

export interface StackOptions {
  /** Options of the reference store; keys default to TEST_KEY on a plan with room for any test. */
  readonly store?: PetstoreOptions;
  /** Environment for parseConfig, on top of the store's URL, TEST_KEY and LOG_LEVEL=silent. */
  readonly env?: Record<string, string>;
  readonly gateway?: GatewayOptions;
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const requests: RequestRecord[] = [];
  const store = await startPetstore({
    keys: { [TEST_KEY]: { perMinute: 100_000, perDay: 1_000_000 } },
    ...options.store,
    onRequest: (record) => {
      requests.push(record);
      options.store?.onRequest?.(record);
    },
  });
  const config = parseConfig({
    PORT: '0',
    PETSTORE_BASE_URL: store.url,
    PETSTORE_API_KEY: TEST_KEY,
    PETSTORE_RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const gateway = await createGateway(config, { host: '127.0.0.1', ...options.gateway });
  return {
    store,
    gateway,
    config,
    requests,
    count: (operation) => requests.filter((record) => operation === undefined || record.operation === operation).length,
    query: (query, queryOptions) => gql(gateway.url, query, queryOptions),
    async close() {
      await gateway.close();
      await store.close();
    },
  };
}
