/**
 * The budget's Lua (src/gateway/upstream/limits/lua/) is the model (model.ts) on Redis: the same
 * random sequences of reservations, answers (with and without rate-limit headers, 429s with and
 * without Retry-After) and releases, at random times and on random plans, give the same results
 * from both, step by step, against a real redis-server. This is what makes the simulation, which
 * runs the model, a statement about replicas sharing Redis too.
 */

import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateWindow } from '../../../src/config.js';
import * as model from '../../../src/gateway/upstream/limits/model.js';
import { RedisBudget } from '../../../src/gateway/upstream/limits/redis-budget.js';
import { type RedisServer, startRedis } from '../../helpers/redis.js';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const PLANS: readonly (readonly RateWindow[])[] = [
  [],
  [{ count: 3, windowMs: 20_000 }],
  [
    { count: 5, windowMs: 20_000 },
    { count: 8, windowMs: 60_000 },
  ],
  [{ count: 40, windowMs: 30_000 }],
];

type Step =
  | { kind: 'reserve' }
  | {
      kind: 'answer';
      pick: number;
      status: 0 | 200 | 429;
      headers: { limit: number; remaining: number; resetInMs: number } | undefined;
      retryAfterMs: number | undefined;
      jitter: number;
    }
  | { kind: 'release'; pick: number; unsent: boolean }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'reserve' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('answer' as const),
      pick: fc.nat(),
      status: fc.constantFrom<0 | 200 | 429>(200, 200, 200, 200, 200, 429, 0),
      headers: fc.option(
        fc.record({
          limit: fc.integer({ min: 1, max: 50 }),
          remaining: fc.integer({ min: 0, max: 50 }),
          resetInMs: fc.integer({ min: 1, max: 40_000 }),
        }),
        { nil: undefined },
      ),
      retryAfterMs: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: undefined }),
      jitter: fc.double({ min: 0, max: 0.999, noNaN: true }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(), unsent: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 15_000 }) }) },
);

let run = 0;

describe('the budget on Redis', () => {
  it('gives, step by step, what the model gives', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PLANS),
        fc.constantFrom(1, 0.5),
        fc.array(step, { minLength: 1, maxLength: 80 }),
        async (windows, share, steps) => {
          const plan = { windows, share };
          const onRedis = new RedisBudget({
            client,
            prefix: `lua-${run++}`,
            tag: 't',
            inflightMs: 600_000,
            channel: 'c',
          });
          const budget = model.newBudget();
          const out: { seq: number; at: number }[] = [];
          let now = 1_795_000_000_000;
          for (const s of steps) {
            if (s.kind === 'wait') {
              now += s.ms;
            } else if (s.kind === 'reserve') {
              const expected = model.reserve(budget, plan, now);
              const got = await onRedis.reserve('k', plan, now);
              expect(got).toEqual(
                'seq' in expected
                  ? { ok: true, seq: expected.seq, room: expected.room, used: expected.used }
                  : { ok: false, seq: 0, room: expected.room, used: 0 },
              );
              if ('seq' in expected) out.push({ seq: expected.seq, at: now });
            } else if (out.length > 0) {
              const [{ seq, at }] = out.splice(s.pick % out.length, 1) as [{ seq: number; at: number }];
              if (s.kind === 'release') {
                model.release(budget, seq, s.unsent ? at : undefined);
                const room = await onRedis.release('k', seq, now, plan, true, s.unsent);
                expect(room).toEqual(model.room(budget, plan, now));
              } else {
                // Resets on a 10 s grid, as an upstream's fixed windows: answers often share one.
                const resetAt = Math.ceil((now + (s.headers?.resetInMs ?? 0)) / 10_000) * 10_000;
                const word = s.headers
                  ? { limit: s.headers.limit, remaining: s.headers.remaining, resetAt }
                  : { limit: 0, remaining: 0, resetAt: 0 };
                const said = { status: s.status, word, retryAfterMs: s.retryAfterMs, jitter: s.jitter };
                const pauseMs = model.answer(budget, plan, seq, said, now);
                const expected = { pauseMs, room: model.room(budget, plan, now), view: model.view(budget, plan, now) };
                expect(await onRedis.answer('k', seq, said, now, plan, true)).toEqual(expected);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  }, 60_000);

  it("keeps a key's state and log as long as they can matter (its longest window, a pause), and then lets them expire", async () => {
    const plan = {
      windows: [
        { count: 5, windowMs: 20_000 },
        { count: 8, windowMs: 60_000 },
      ],
      share: 1,
    };
    const onRedis = new RedisBudget({ client, prefix: 'ttl', tag: 't', inflightMs: 30_000, channel: 'c' });
    const keys = ['ttl:{k}:budget', 'ttl:{k}:sends'];
    const ttls = async () => Promise.all(keys.map((key) => client.pttl(key)));
    const now = 1_795_000_000_000;
    const first = await onRedis.reserve('k', plan, now);
    for (const ttl of await ttls()) {
      expect(ttl).toBeGreaterThan(60_000);
      expect(ttl).toBeLessThanOrEqual(120_000);
    }
    // A 429 whose pause outlasts the longest window keeps the state past it.
    const said = { status: 429, word: { limit: 0, remaining: 0, resetAt: 0 }, retryAfterMs: 300_000, jitter: 0 };
    await onRedis.answer('k', first.seq, said, now + 1_000, plan, false);
    const [budget] = await ttls();
    expect(budget).toBeGreaterThan(300_000);
    expect(budget).toBeLessThanOrEqual(361_000);
  });
});
