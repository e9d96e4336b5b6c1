/**
 * A schedule of the budget simulation, and how fast-check generates and shrinks one: the plan, the
 * upstream's rules and hostile modes, the replicas, and clients arriving at random with operations
 * of one or several requests, createPets, clients that leave, greedy and light clients sharing the
 * server key. Everything is data, so a failure prints as the schedule that caused it.
 */

import fc from 'fast-check';
import type { RateWindow } from '../../src/config.js';
import { type HeaderMode, type RetryAfterMode, SERVER_KEY, type UpstreamRules } from './sim-upstream.js';

export interface OpSpec {
  /** Ms after the start. */
  readonly at: number;
  /** Sequential pages of one `pets` walk, pets fields side by side, or one createPet. */
  readonly shape: 'walk' | 'fields' | 'create';
  readonly requests: number;
  /** The client goes away this long after it asked. */
  readonly leaveAfterMs?: number | undefined;
}

export type ClientSpec =
  | {
      readonly kind: 'ops';
      readonly id: string;
      readonly replica: number;
      readonly key: string;
      readonly ops: readonly OpSpec[];
    }
  /** Keeps `concurrency` one-request operations in flight from `from` to `to`; after a refusal, thinks first. */
  | {
      readonly kind: 'greedy';
      readonly id: string;
      readonly replica: number;
      readonly key: string;
      readonly concurrency: number;
      readonly from: number;
      readonly to: number;
    }
  /** One one-request operation every `everyMs`, from `from` to `to`: a light client beside greedy ones. */
  | {
      readonly kind: 'steady';
      readonly id: string;
      readonly replica: number;
      readonly key: string;
      readonly everyMs: number;
      readonly from: number;
      readonly to: number;
    };

/** A fault of the shared store, for replicas that share one (none of these apply to one replica alone). */
export interface StoreFault {
  readonly kind: 'stall' | 'partition' | 'lost-reply' | 'failover' | 'node-failover' | 'flush';
  readonly at: number;
  readonly forMs: number;
  /** The replica cut off (partition) or whose reply is lost (lost-reply). */
  readonly replica: number;
}

export interface Scenario {
  /** Seeds the network's jitter. */
  readonly seed: number;
  /** Where the virtual clock starts (epoch ms): where the upstream's windows fall. */
  readonly startAt: number;
  /** PETSTORE_RATE_LIMITS ([]: off). */
  readonly plan: readonly RateWindow[];
  readonly upstream: UpstreamRules;
  readonly maxWaitMs: number;
  readonly timeoutMs: number;
  readonly replicas: number;
  readonly clients: readonly ClientSpec[];
  readonly faults: readonly StoreFault[];
  /** No client starts an operation after this. */
  readonly horizonMs: number;
}

const DAY = 86_400_000;

/** Plans as PETSTORE_RATE_LIMITS writes them: the README's small one, the free plan, and shapes between. */
const PLANS: readonly (readonly RateWindow[])[] = [
  [{ count: 5, windowMs: 1_000 }],
  [{ count: 5, windowMs: 2_000 }],
  [
    { count: 10, windowMs: 2_000 },
    { count: 100, windowMs: 60_000 },
  ],
  [{ count: 20, windowMs: 10_000 }],
  [
    { count: 60, windowMs: 60_000 },
    { count: 1_000, windowMs: DAY },
  ],
];

/** The upstream's two windows for a plan: the same limits (or stricter, for a liar), a day that never binds. */
function upstreamWindows(plan: readonly RateWindow[], stricter: boolean): readonly [RateWindow, RateWindow] {
  const [first, second] = plan as [RateWindow, RateWindow | undefined];
  // Stricter: a lower count over the same window (its Reset is in whole seconds, as the spec has it).
  const minute = stricter ? { count: Math.max(2, Math.floor(first.count / 3)), windowMs: first.windowMs } : first;
  return [minute, second ?? { count: 1_000_000, windowMs: DAY }];
}

const headerModes: fc.Arbitrary<HeaderMode> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<HeaderMode>('honest') },
  { weight: 1, arbitrary: fc.constantFrom<HeaderMode>('absent', 'lying', 'reset-ms', 'reset-delta') },
);
const retryAfterModes: fc.Arbitrary<RetryAfterMode> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<RetryAfterMode>('seconds', 'date') },
  { weight: 1, arbitrary: fc.constantFrom<RetryAfterMode>('absent', 'past', 'zero', 'absurd') },
);

function opArb(horizonMs: number, share: number): fc.Arbitrary<OpSpec> {
  return fc.record(
    {
      at: fc.integer({ min: 0, max: horizonMs }),
      shape: fc.constantFrom<OpSpec['shape']>('walk', 'fields', 'create'),
      requests: fc.integer({ min: 1, max: Math.max(1, Math.min(share, 4)) }),
      leaveAfterMs: fc.option(fc.integer({ min: 0, max: 3_000 }), { nil: undefined, freq: 6 }),
    },
    { requiredKeys: ['at', 'shape', 'requests'] },
  );
}

interface Parts {
  readonly plan: readonly RateWindow[];
  readonly replicas: number;
  readonly horizonMs: number;
}

function clientArb(id: number, { plan, replicas, horizonMs }: Parts, kinds: readonly ClientSpec['kind'][]) {
  const share = Math.max(1, Math.floor((plan[0] as RateWindow).count / 4));
  const replica = fc.integer({ min: 0, max: replicas - 1 });
  const of = {
    ops: fc.record({
      kind: fc.constant('ops' as const),
      id: fc.constant(`c${id}`),
      replica,
      key: fc.constant(SERVER_KEY),
      ops: fc.array(opArb(horizonMs, share), { minLength: 1, maxLength: 12 }),
    }),
    greedy: fc.record({
      kind: fc.constant('greedy' as const),
      id: fc.constant(`c${id}`),
      replica,
      key: fc.constant(SERVER_KEY),
      concurrency: fc.integer({ min: 2, max: 16 }),
      from: fc.integer({ min: 0, max: 1_000 }),
      to: fc.constant(horizonMs),
    }),
    steady: fc.record({
      kind: fc.constant('steady' as const),
      id: fc.constant(`c${id}`),
      replica,
      key: fc.constant(SERVER_KEY),
      everyMs: fc.integer({ min: 300, max: 2_000 }),
      from: fc.integer({ min: 0, max: 1_000 }),
      to: fc.constant(horizonMs),
    }),
  } satisfies Record<ClientSpec['kind'], fc.Arbitrary<ClientSpec>>;
  return fc.oneof(...kinds.map((kind) => of[kind] as fc.Arbitrary<ClientSpec>));
}

/** Bursts of an unseen client of the key: enough at once to spend a window. */
function foreignBursts(plan: readonly RateWindow[], horizonMs: number): fc.Arbitrary<number[]> {
  const burst = (plan[0] as RateWindow).count + 1;
  return fc
    .array(fc.integer({ min: 0, max: horizonMs }), { minLength: 1, maxLength: 4 })
    .map((times) => times.flatMap((at) => Array.from({ length: burst }, () => at)));
}

interface Family {
  readonly plans?: readonly number[];
  readonly stricter: fc.Arbitrary<boolean>;
  readonly headers: fc.Arbitrary<HeaderMode>;
  readonly retryAfter: fc.Arbitrary<RetryAfterMode>;
  readonly foreign: (plan: readonly RateWindow[], horizonMs: number) => fc.Arbitrary<number[]>;
  readonly skew: fc.Arbitrary<number>;
  readonly silent: fc.Arbitrary<boolean>;
  readonly latencyMs: fc.Arbitrary<number>;
  readonly clients: (parts: Parts) => fc.Arbitrary<ClientSpec[]>;
  /** Replicas sharing the budget (default 1), and whether their shared store fails. */
  readonly replicas?: fc.Arbitrary<number>;
  readonly faults?: boolean;
}

const none = () => fc.constant([] as number[]);
const clients = (count: { min: number; max: number }, kinds: readonly ClientSpec['kind'][]) => (parts: Parts) =>
  fc.integer(count).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => clientArb(i, parts, kinds))));

const CONTENTION: Family = {
  plans: [0, 1, 3],
  stricter: fc.constant(false),
  headers: fc.constant<HeaderMode>('honest'),
  retryAfter: fc.constant<RetryAfterMode>('seconds'),
  foreign: none,
  skew: fc.constant(0),
  silent: fc.constant(false),
  latencyMs: fc.integer({ min: 0, max: 60 }),
  clients: (parts) =>
    fc.tuple(
      clientArb(0, parts, ['greedy']),
      clientArb(1, parts, ['steady']),
      ...[clientArb(2, parts, ['greedy', 'ops'])],
    ),
};

/**
 * Kinds of schedule, each aimed at what could break (each has a test file of its name): `mixed`,
 * anything at all; `liar`, an upstream whose headers lie about a lower real limit, under many
 * clients; `spent`, a key spent by a client we cannot see (429s with every kind of Retry-After);
 * `replicas`, 2-3 replicas sharing the budget through a store that fails; `contention`, greedy and
 * light clients sharing the server key; `across`, the same on two replicas through a healthy store.
 */
const FAMILIES: Record<string, Family> = {
  mixed: {
    stricter: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    headers: headerModes,
    retryAfter: retryAfterModes,
    foreign: (plan, horizonMs) =>
      fc.oneof({ weight: 3, arbitrary: none() }, { weight: 1, arbitrary: foreignBursts(plan, horizonMs) }),
    skew: fc.oneof(
      { weight: 5, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.integer({ min: -3_000, max: 3_000 }) },
    ),
    silent: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    latencyMs: fc.integer({ min: 0, max: 60 }),
    clients: clients({ min: 1, max: 4 }, ['ops', 'ops', 'ops', 'greedy', 'steady']),
  },
  liar: {
    stricter: fc.constant(true),
    headers: fc.constantFrom<HeaderMode>('lying', 'absent', 'reset-ms'),
    retryAfter: retryAfterModes,
    foreign: none,
    skew: fc.constant(0),
    silent: fc.constant(false),
    latencyMs: fc.integer({ min: 10, max: 60 }),
    clients: clients({ min: 1, max: 3 }, ['greedy', 'ops']),
  },
  spent: {
    stricter: fc.constant(false),
    headers: fc.constant<HeaderMode>('honest'),
    retryAfter: fc.constantFrom<RetryAfterMode>(
      'seconds',
      'date',
      'seconds',
      'date',
      'absent',
      'past',
      'zero',
      'absurd',
    ),
    foreign: foreignBursts,
    skew: fc.constant(0),
    silent: fc.constant(false),
    latencyMs: fc.integer({ min: 0, max: 60 }),
    clients: clients({ min: 1, max: 3 }, ['ops']),
  },
  replicas: {
    stricter: fc.constant(false),
    headers: fc.constant<HeaderMode>('honest'),
    retryAfter: fc.constantFrom<RetryAfterMode>('seconds', 'date'),
    foreign: none,
    skew: fc.constant(0),
    silent: fc.constant(false),
    latencyMs: fc.integer({ min: 0, max: 40 }),
    clients: clients({ min: 2, max: 4 }, ['ops', 'ops', 'greedy', 'steady']),
    replicas: fc.integer({ min: 2, max: 3 }),
    faults: true,
  },
  contention: CONTENTION,
  across: {
    ...CONTENTION,
    clients: (parts) =>
      fc.tuple(
        clientArb(0, parts, ['greedy']),
        clientArb(1, parts, ['steady']),
        ...[clientArb(2, parts, ['greedy', 'steady'])],
      ),
    replicas: fc.constant(2),
  },
};

export const FAMILY_NAMES = Object.keys(FAMILIES);

/** Faults of the shared store: a stall, one replica cut off or losing replies, a failover (of one server, or of a Cluster's node), a flush. */
function faultsArb(replicas: number, horizonMs: number): fc.Arbitrary<StoreFault[]> {
  const fault = fc.record({
    kind: fc.constantFrom<StoreFault['kind']>('stall', 'partition', 'lost-reply', 'failover', 'node-failover', 'flush'),
    at: fc.integer({ min: 0, max: horizonMs }),
    forMs: fc.integer({ min: 100, max: 6_000 }),
    replica: fc.integer({ min: 0, max: replicas - 1 }),
  });
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant([] as StoreFault[]) },
    { weight: 3, arbitrary: fc.array(fault, { minLength: 1, maxLength: 2 }) },
  );
}

/** What fast-check draws: a family, then a schedule of it. */
export function scenarioArb(options: { families?: readonly string[] } = {}): fc.Arbitrary<Scenario> {
  const names = options.families ?? Object.keys(FAMILIES);
  return fc.constantFrom(...names).chain((name) => {
    const family = FAMILIES[name] as Family;
    const plans = family.plans ?? PLANS.map((_, i) => i);
    return fc
      .record({
        planIndex: fc.constantFrom(...plans),
        stricter: family.stricter,
        replicas: family.replicas ?? fc.constant(1),
        horizonMs: fc.integer({ min: 3_000, max: 20_000 }),
      })
      .chain(({ planIndex, stricter, replicas, horizonMs }) => {
        const plan = PLANS[planIndex] as readonly RateWindow[];
        const parts = { plan, replicas, horizonMs };
        return fc.record({
          seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          startAt: fc.integer({ min: 0, max: 60_000 }).map((offset) => Date.UTC(2026, 10, 27) + offset),
          plan: fc.constant(plan),
          upstream: fc.record({
            windows: fc.constant(upstreamWindows(plan, stricter)),
            headers: family.headers,
            retryAfter: family.retryAfter,
            latencyMs: family.latencyMs,
            jitterMs: fc.integer({ min: 0, max: 30 }),
            skewMs: family.skew,
            silent: family.silent,
            foreign: family.foreign(plan, horizonMs),
          }),
          maxWaitMs: fc.integer({ min: 1_000, max: 10_000 }),
          timeoutMs: fc.integer({ min: 500, max: 5_000 }),
          replicas: fc.constant(replicas),
          clients: family.clients(parts),
          faults: family.faults ? faultsArb(replicas, horizonMs) : fc.constant([] as StoreFault[]),
          horizonMs: fc.constant(horizonMs),
        });
      });
  });
}
