/**
 * Redis as the shared budget (src/gateway/upstream/limits/shared-budget.ts) meets it, faked: the
 * replies of its scripts (set by the test), every call recorded, and a connection that fails on cue
 * (`down`, `beatFails`), with a clock the test moves. Faked so that a test sets exactly what Redis
 * said and when it stopped answering; the scripts themselves run against a real redis-server in
 * test/unit/gateway/upstream/redis-budget.test.ts and budget-failover.test.ts.
 */

import { EventEmitter } from 'node:events';
import { createLogger } from '../../src/gateway/observability/logger.js';
import type { Recorded } from '../../src/gateway/upstream/limits/budget.js';
import type { Answer, Plan, Room, Wait } from '../../src/gateway/upstream/limits/model.js';
import type { Member, Planned } from '../../src/gateway/upstream/limits/redis-budget.js';
import {
  type BudgetBackend,
  type SharedBudgetOptions,
  SharedBudgetStore,
} from '../../src/gateway/upstream/limits/shared-budget.js';
import { said as answerWith, seqOf, tooMany } from './budget-answers.js';
import { until } from './until.js';

export const T = 1_800_000_000_000;
/** Long on the real clock: the beat timer never fires within a test; beats come from ready() and the way back. */
export const BEAT_MS = 10_000;
export const LEASE_MS = 20_000;
/** When a replica whose last beat was at T may plan alone: its lease lapsed, plus a beat for the others to notice. */
export const LOCAL_FROM = T + LEASE_MS + BEAT_MS;
export const MINUTE = 60_000;
export const PLAN: Plan = { windows: [{ count: 10, windowMs: MINUTE }], share: 1 };

export const said = (remaining: number): Answer => answerWith(remaining, T + 10 * MINUTE);
export { seqOf, tooMany };
export const open = (now: number): Room => ({ free: 1, until: now, wait: undefined });
export const refusal = (wait: Wait, at: number): Planned => ({
  ok: false,
  seq: 0,
  room: { free: 0, until: at, wait },
  used: 0,
});

class FakeConnection extends EventEmitter {
  status = 'ready';
  /** The keys asked to learn whether Redis is back. */
  readonly probed: string[] = [];
  constructor(private readonly redis: FakeRedis) {
    super();
  }
  pttl(key: string): Promise<number> {
    this.probed.push(key);
    return this.redis.down ? Promise.reject(new Error('Connection is closed.')) : Promise.resolve(-1);
  }
}

/** Redis as the store meets it: its scripts' replies (set by the test), each call recorded, failing while `down`. */
export class FakeRedis {
  down = false;
  beatFails = false;
  /** Set: a reconciliation's reply waits for it (Redis slow to answer on the way back). */
  slow: Promise<void> | undefined;
  member: Member = { alive: 1, away: 0 };
  /** The reply to a reservation: planned with room to spare, unless the test says otherwise. */
  reply: (keyId: string, now: number) => Planned = (_keyId, now) => ({
    ok: true,
    seq: ++this.#seq,
    room: { free: 5, until: now, wait: undefined },
    used: 1,
  });
  readonly reserved: { keyId: string; plan: Plan; now: number }[] = [];
  readonly answered: { keyId: string; seq: number; status: number; plan: Plan; wantRoom: boolean }[] = [];
  readonly released: { keyId: string; seq: number; now: number; plan: Plan; wantRoom: boolean }[] = [];
  readonly reconciled: { keyId: string; pausedUntil: number; sent: readonly number[]; now: number; plan: Plan }[] = [];
  readonly forgotten: string[] = [];
  readonly beats: { now: number; leaseMs: number; awayMs: number; since: number }[] = [];
  /** Every command that reached Redis, in order. */
  readonly commands: string[] = [];
  readonly connection = new FakeConnection(this);
  channel = '';
  #seq = 0;

  readonly backend = (_tag: string, channel: string): BudgetBackend => {
    this.channel = channel;
    return {
      reserve: async (keyId, plan, now) => {
        this.#reach('reserve');
        this.reserved.push({ keyId, plan, now });
        return this.reply(keyId, now);
      },
      answer: async (keyId, seq, answer, now, plan, wantRoom): Promise<Recorded> => {
        this.#reach('answer');
        this.answered.push({ keyId, seq, status: answer.status, plan, wantRoom });
        return { pauseMs: answer.retryAfterMs ?? 0, room: { free: 2, until: now, wait: undefined }, view: undefined };
      },
      release: async (keyId, seq, now, plan, wantRoom) => {
        this.#reach('release');
        this.released.push({ keyId, seq, now, plan, wantRoom });
        return { free: 2, until: now, wait: undefined };
      },
      reconcile: async (keyId, pausedUntil, sent, now, plan) => {
        this.#reach('reconcile');
        this.reconciled.push({ keyId, pausedUntil, sent, now, plan });
        await this.slow;
      },
      forget: async (keyId) => {
        this.#reach('forget');
        this.forgotten.push(keyId);
      },
      beat: async (_id, now, leaseMs, awayMs, since) => {
        this.#reach('beat');
        this.beats.push({ now, leaseMs, awayMs, since });
        if (this.beatFails) throw new Error('Command timed out');
        return this.member;
      },
    };
  };

  /** ioredis without an offline queue: a command fails at once while the connection is not ready. */
  #reach(command: string): void {
    if (this.down || this.connection.status !== 'ready') throw new Error('Connection is closed.');
    this.commands.push(command);
  }
}

const stores: SharedBudgetStore[] = [];
/** Closes every store made since the last call (each test file's afterEach). */
export async function closeStores(): Promise<void> {
  await Promise.all(stores.splice(0).map((store) => store.close()));
}

export function shared(options: Partial<SharedBudgetOptions> = {}) {
  const redis = new FakeRedis();
  const clock = { now: T };
  const store = new SharedBudgetStore({
    client: redis.connection,
    backend: redis.backend,
    prefix: 'p',
    plan: PLAN,
    now: () => clock.now,
    logger: createLogger('silent'),
    inflightMs: 60_000,
    beatMs: BEAT_MS,
    leaseMs: LEASE_MS,
    ...options,
  });
  stores.push(store);
  return { store, redis, clock };
}

/** A store that has beaten once at T, with `member` replicas counted. */
export async function started(options: Partial<SharedBudgetOptions> = {}, member: Member = { alive: 1, away: 0 }) {
  const started = shared(options);
  started.redis.member = member;
  await started.store.ready();
  return started;
}

/** Redis stops answering at `at`, and a command of `keyId` is the first to fail. */
export async function loseRedis({ store, redis, clock }: ReturnType<typeof shared>, keyId = 'lost-on', at = T + 50) {
  redis.down = true;
  clock.now = at;
  await store.reserve(keyId, at);
  if (!store.degraded) throw new Error(`a failed command of ${keyId} left the budget on Redis`);
}

export async function comeBack({ store, redis }: ReturnType<typeof shared>): Promise<void> {
  redis.down = false;
  redis.connection.emit('ready');
  await until('back on Redis', () => !store.degraded, { timeoutMs: 2_000, everyMs: 1 });
}

/** How many requests of the key go now, each answered with plenty left (so only the windows bind), and the refusal after. */
export async function plannable(store: SharedBudgetStore, keyId: string, now: number) {
  for (let planned = 0; planned < 20; planned++) {
    const reservation = await store.reserve(keyId, now);
    if (!reservation.ok) return { planned, refused: reservation.room };
    await store.answer(keyId, reservation.seq, said(99 - planned), now, reservation.epoch);
  }
  return { planned: 20, refused: undefined };
}
