/**
 * Clients of one shared server key get their fair share of its window (issue 34, item 9): a greedy
 * client that keeps a dozen queries waiting cannot take every send the window frees while a light
 * client asks for one query at a time. The reference store with a 2 s window stands in for a
 * minute; CLIENT_ID_HEADER names the two clients, as a trusted proxy in front would.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { errorCodes } from '../../helpers/gql.js';
import { type Stack, startStack, TEST_KEY } from '../../helpers/start-stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('clients of one server key', () => {
  it("serve a light client its share while a greedy one keeps the key's window full", async () => {
    stack = await startStack({
      store: { keys: { [TEST_KEY]: { perMinute: 24, perDay: 100_000 } }, minuteMs: 4_000 },
      env: {
        PETSTORE_RATE_LIMITS: '24/4s',
        PETSTORE_MAX_WAIT: '1200ms',
        CLIENT_ID_HEADER: 'x-client-id',
        PETSTORE_COALESCE: 'false',
      },
    });
    const target = stack;
    const RUN_MS = 8_000;
    const until = Date.now() + RUN_MS;
    let n = 0;
    const ask = (client: string) =>
      target.query(`{ pets(first: ${(n++ % 100) + 1}) { nodes { id } } }`, { headers: { 'x-client-id': client } });
    const tally = { greedy: { ok: 0, refused: 0 }, light: { ok: 0, refused: 0 } };
    const count = (client: 'greedy' | 'light', codes: unknown[]) => {
      if (codes.length === 0) tally[client].ok++;
      else {
        expect(codes).toEqual(['RATE_LIMITED']);
        tally[client].refused++;
      }
    };
    // The greedy client keeps 12 queries waiting all the time.
    const greedy = Array.from({ length: 12 }, async () => {
      while (Date.now() < until) count('greedy', errorCodes(await ask('greedy')));
    });
    // The light client asks one query at a time, 100 ms after each answer.
    const light = (async () => {
      while (Date.now() < until) {
        count('light', errorCodes(await ask('light')));
        await sleep(100);
      }
    })();
    await Promise.all([...greedy, light]);
    // Two windows of 24: a share of 12 each for the two clients. First come, first served, the greedy
    // client took the bursts each window freed and the light one got 7 (measured before the fix).
    expect(tally.light.ok).toBeGreaterThanOrEqual(12);
    expect(tally.greedy.ok).toBeGreaterThanOrEqual(12);
    expect(target.requests.filter((record) => record.status === 429)).toEqual([]);
  }, 20_000);
});
