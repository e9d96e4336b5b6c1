/**
 * Runs one schedule of the budget simulation on a virtual clock: vitest's fake timers (Sinon's
 * fake-timers) stand in for Date, timers and performance.now, so bottleneck's own timers run on it
 * too and a simulated minute takes milliseconds. Each replica is the gateway's real upstream layer
 * (createUpstream: sharing, the operation budget, the limiter, the budget store, the REST client and
 * its attempt stage), with the simulated network in place of undici's pool.
 */

import { vi } from 'vitest';
import { createLogger } from '../../src/gateway/observability/logger.js';
import { createMetrics } from '../../src/gateway/observability/metrics.js';
import type { UpstreamError } from '../../src/gateway/upstream/errors.js';
import { SharedBudgetStore } from '../../src/gateway/upstream/limits/shared-budget.js';
import { createOperation } from '../../src/gateway/upstream/operation.js';
import { createUpstream, type Upstream, type UpstreamConfig } from '../../src/gateway/upstream/upstream.js';
import type { ClientSpec, OpSpec, Scenario } from './scenario.js';
import { prng, simDispatcher } from './sim-dispatcher.js';
import { SimStore } from './sim-store.js';
import { SimUpstream } from './sim-upstream.js';

export interface OpRecord {
  readonly id: string;
  readonly client: string;
  readonly replica: number;
  readonly shape: OpSpec['shape'];
  readonly requests: number;
  readonly start: number;
  end?: number;
  ok?: boolean;
  code?: string | undefined;
  outcome?: string | undefined;
  /** A createPet's name. */
  name?: string;
  left?: boolean;
}

export interface SimResult {
  readonly upstream: SimUpstream;
  readonly ops: readonly OpRecord[];
}

const silent = createLogger('silent');
/** One registry for every run (metrics are not what is checked; making one per run costs more than a run). */
const metrics = createMetrics();
/** Think time of a greedy or light client after a refusal, so a refused loop does not spin in zero virtual time. */
const THINK_MS = 250;

export function upstreamConfig(scenario: Scenario): UpstreamConfig {
  return {
    petstoreBaseUrl: 'http://petstore.sim/v1',
    rateLimits: scenario.plan,
    maxWaitMs: scenario.maxWaitMs,
    timeoutMs: scenario.timeoutMs,
    cacheTtlMs: 0,
    staleTtlMs: 0,
    cacheSizeBytes: 32 * 1024 * 1024,
    coalesce: true,
    maxRetryAfterMs: 3_600_000,
    keyIdleMs: 300_000,
    maxKeys: 10_000,
    redis: undefined,
    upstreamConnections: 64,
    upstreamConnectionsPerKey: 16,
    maxQueuedPerClient: 100,
  };
}

/** The requests one operation may spend: MAX_BUDGET_SHARE (a quarter) of the smallest window. */
export function shareOf(scenario: Scenario): number {
  const counts = scenario.plan.map((window) => window.count);
  return counts.length === 0 ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(Math.min(...counts) / 4));
}

export async function runScenario(scenario: Scenario): Promise<SimResult> {
  vi.useFakeTimers({
    now: scenario.startAt,
    toFake: [
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'setImmediate',
      'clearImmediate',
      'Date',
      'performance',
    ],
  });
  // The backoff's jitter too comes from the schedule's seed, so a schedule replays exactly.
  const random = vi.spyOn(Math, 'random').mockImplementation(prng(scenario.seed ^ 0x5bd1e995));
  try {
    const upstream = new SimUpstream(scenario.upstream);
    // Replicas share a budget through the simulated store (as through Redis); one gateway alone plans in memory.
    const store =
      scenario.replicas > 1
        ? new SimStore(scenario.replicas, scenario.faults, scenario.startAt, prng(scenario.seed ^ 0x2545f491))
        : undefined;
    const replicas: Upstream[] = [];
    const shared: SharedBudgetStore[] = [];
    for (let index = 0; index < scenario.replicas; index++) {
      const dispatcher = simDispatcher(upstream, prng(scenario.seed + index));
      const connection = store?.replica(index);
      const budgetStore =
        connection === undefined
          ? undefined
          : (plan: import('../../src/gateway/upstream/limits/model.js').Plan) => {
              const budget = new SharedBudgetStore({
                ...connection,
                prefix: 'sim',
                plan,
                now: () => Date.now(),
                logger: silent,
                inflightMs: scenario.maxWaitMs + 2 * scenario.timeoutMs + 5_000,
              });
              shared.push(budget);
              return budget;
            };
      const deps = {
        logger: silent,
        metrics,
        now: () => Date.now(),
        dispatcher,
        ...(budgetStore ? { budgetStore } : {}),
      };
      replicas.push(await createUpstream(upstreamConfig(scenario), deps));
    }
    // Each replica's first beat (one may start during a fault: then it starts on its local share).
    let started = false;
    const ready = Promise.all(shared.map((budget) => budget.ready())).finally(() => {
      started = true;
    });
    while (!started) await vi.advanceTimersByTimeAsync(10);
    await ready;
    const ops: OpRecord[] = [];
    let next = 0;
    const start = (client: ClientSpec, op: OpSpec): Promise<OpRecord> =>
      runOp(scenario, replicas[client.replica] as Upstream, client, op, `op${next++}`, ops);
    for (const client of scenario.clients) drive(scenario, client, start);
    await vi.advanceTimersByTimeAsync(scenario.horizonMs + scenario.maxWaitMs + scenario.timeoutMs + 5_000);
    const closing = Promise.all(replicas.map((replica) => replica.close()));
    await vi.advanceTimersByTimeAsync(1_000);
    await closing;
    return { upstream, ops };
  } finally {
    random.mockRestore();
    vi.useRealTimers();
  }
}

/** Starts a client's operations at their times (a greedy or light client: as it goes). */
function drive(
  scenario: Scenario,
  client: ClientSpec,
  start: (client: ClientSpec, op: OpSpec) => Promise<OpRecord>,
): void {
  const one: OpSpec = { at: 0, shape: 'walk', requests: 1 };
  if (client.kind === 'ops') {
    const ops = [...client.ops].sort((a, b) => a.at - b.at);
    inTurn(
      ops.map((op) => op.at),
      (i) => void start(client, ops[i] as OpSpec),
    );
  } else if (client.kind === 'steady') {
    const times: number[] = [];
    for (let t = client.from; t < client.to; t += client.everyMs) times.push(t);
    inTurn(times, () => void start(client, one));
  } else {
    const loop = async () => {
      while (Date.now() - scenario.startAt < client.to) {
        const record = await start(client, one);
        // At least a millisecond between two, so a loop always lets the virtual clock move.
        await new Promise((resolve) => setTimeout(resolve, record.ok ? 1 : THINK_MS));
      }
    };
    inTurn(
      Array.from({ length: client.concurrency }, () => client.from),
      () => void loop(),
    );
  }
}

/**
 * Calls `fn(i)` at each of `times` (ms from now, ascending), with one timer pending at a time: the
 * fake clock looks through every pending timer each time one fires, and a client's whole schedule
 * set up front (600 arrivals of a steady client) made a third of the simulation's CPU that search.
 */
function inTurn(times: readonly number[], fn: (index: number) => void): void {
  const base = Date.now();
  let index = 0;
  const next = () => {
    if (index < times.length) setTimeout(fire, Math.max(0, base + (times[index] as number) - Date.now()));
  };
  const fire = () => {
    fn(index++);
    next();
  };
  next();
}

async function runOp(
  scenario: Scenario,
  upstream: Upstream,
  client: ClientSpec,
  spec: OpSpec,
  id: string,
  ops: OpRecord[],
): Promise<OpRecord> {
  const record: OpRecord = {
    id,
    client: client.id,
    replica: client.replica,
    shape: spec.shape,
    requests: spec.requests,
    start: Date.now(),
  };
  ops.push(record);
  const controller = new AbortController();
  if (spec.leaveAfterMs !== undefined && spec.leaveAfterMs !== null) {
    setTimeout(() => {
      record.left = true;
      controller.abort(new Error('the client left'));
    }, spec.leaveAfterMs);
  }
  const operation = createOperation({
    requestId: id,
    logger: silent,
    signal: controller.signal,
    clientId: client.id,
    maxWaitMs: scenario.maxWaitMs,
    timeoutMs: scenario.timeoutMs,
    maxRequests: shareOf(scenario),
    now: Date.now(),
  });
  const rest = upstream.client.forOperation(operation);
  const page = (n: number) => new URL(`pets?limit=20&after=${id}-${n}`, rest.baseUrl);
  try {
    if (spec.shape === 'create') {
      record.name = `${id}-pet`;
      await rest.createPet(client.key, { name: record.name, categoryId: '7', status: undefined });
    } else if (spec.shape === 'walk') {
      for (let n = 0; n < spec.requests; n++) await rest.listPets(client.key, page(n));
    } else {
      const fields = Array.from({ length: spec.requests }, (_, n) => rest.listPets(client.key, page(n)));
      const settled = await Promise.allSettled(fields);
      const failed = settled.find((result) => result.status === 'rejected');
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    }
    record.ok = true;
  } catch (error) {
    record.ok = false;
    record.code = (error as UpstreamError).code ?? 'INTERNAL';
    record.outcome = (error as UpstreamError).outcome;
  }
  record.end = Date.now();
  return record;
}
