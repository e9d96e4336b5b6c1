/** The per-key limiter every upstream request goes through (DESIGN.md section 6). */

import type { UpstreamResponse } from './client.js';

export interface Limiter {
  /**
   * Runs `attempt` for `key` when the key's budget allows, and may run it again after a 429.
   * Rejects with a RATE_LIMITED GatewayError when the budget cannot serve it in time.
   */
  schedule(key: string, attempt: () => Promise<UpstreamResponse>): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

/** No client-side throttling: each request is sent at once, and a 429 reaches the caller. */
export const passThroughLimiter: Limiter = {
  schedule: (_key, attempt) => attempt(),
  close: async () => {},
};
