/**
 * The budget shared by the replicas on one Redis (redis-budget.ts), with a local share while a
 * replica cannot reach it (docs/operations.md, "Redis: single, Cluster, Sentinel"):
 *
 * - **Leases.** Each replica renews a lease in Redis every `beatMs`; one whose lease lapsed is away,
 *   planning on its local share, for `awayMs` at most (then it counts as gone, and stops planning).
 *   Every replica plans on Redis with the away replicas' local shares kept out (`share`), so the
 *   plan holds however long they are away, and nothing is held back from the ones still there.
 *   A replica back from losing Redis counts as there only those that beat after it came back: a
 *   failover loses Redis for every replica, and one whose lease still holds may be about to plan
 *   alone (on a Cluster its beats may go on, the leases living on another primary).
 * - **The local share.** A replica that lost Redis plans on 1/N of each window and of the upstream's
 *   Remaining (N: the replicas it last saw), from the moment its lease has lapsed in the others'
 *   eyes (the last beat it sent, answered or not, plus the lease, plus one beat for them to notice).
 *   Until then its requests wait; the others plan in full meanwhile.
 * - **Reconciling.** Back on Redis, it first adds what it did meanwhile (its sends, its pauses) and
 *   takes off what Redis still counted in flight for it, then renews its lease, so no window is
 *   planned without its sends and nobody waits for a fence. The upstream's word is dropped for the
 *   keys it used (one probe each), since a failover may have rolled it back.
 *
 * The bound, while a replica is cut off: a window may hold its local share more than the plan, when
 * the others filled it in the seconds before they noticed the lease lapse (test/simulation checks
 * exactly that bound); from then on, none.
 */

import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from '../../observability/logger.js';
import type { RedisClient } from '../redis/connection.js';
import { createFallback, type Fallback } from '../redis/fallback.js';
import { type BudgetStore, MemoryBudgetStore, type Recorded, type Reservation } from './budget.js';
import type { Answer, Plan, Room } from './model.js';
import { type Member, type Planned, RedisBudget } from './redis-budget.js';

/** What the shared budget runs on: RedisBudget's scripts (or, in the simulation, the model behind a faulty network). */
export interface BudgetBackend {
  reserve(keyId: string, plan: Plan, now: number): Promise<Planned>;
  answer(keyId: string, seq: number, said: Answer, now: number, plan: Plan, wantRoom: boolean): Promise<Recorded>;
  release(keyId: string, seq: number, now: number, plan: Plan, wantRoom: boolean, unsent?: boolean): Promise<Room>;
  reconcile(keyId: string, pausedUntil: number, sent: readonly number[], now: number, plan: Plan): Promise<void>;
  forget(keyId: string): Promise<void>;
  beat(id: string, now: number, leaseMs: number, awayMs: number, since: number): Promise<Member>;
}

/** The connection's state, as ioredis tells it. */
export interface Connection {
  readonly status: string;
  on(event: 'ready', listener: () => void): unknown;
  off(event: 'ready', listener: () => void): unknown;
  once(event: 'ready', listener: () => void): unknown;
  pttl(key: string): Promise<number>;
}

export interface SharedBudgetOptions {
  readonly client: Connection;
  /** Runs the scripts; default: RedisBudget on `client` (which must then be a RedisClient). */
  readonly backend?: (tag: string, channel: string) => BudgetBackend;
  /** A subscribed connection on which other replicas' answers are heard (none: waiters ask on timers). */
  readonly subscriber?:
    | {
        on(event: 'message', listener: (channel: string, message: string) => void): unknown;
        subscribe(channel: string): Promise<unknown>;
      }
    | undefined;
  readonly prefix: string;
  /** The whole plan (share 1). */
  readonly plan: Plan;
  readonly now: () => number;
  readonly logger: Logger;
  /** How long a request counts as in flight when its replica never reports back (it crashed). */
  readonly inflightMs: number;
  readonly beatMs?: number;
  readonly leaseMs?: number;
  readonly awayMs?: number;
  /** The local share's bounds (MemoryBudgetStore). */
  readonly maxKeys?: number;
  readonly idleMs?: number;
  /** Told when the budget leaves Redis (false) and when it is shared again (true). */
  readonly onShared?: (shared: boolean) => void;
}

/** Defaults: a beat every half second, a lease of three beats, away for five minutes at most. */
const BEAT_MS = 500;
const LEASE_MS = 1_500;
const AWAY_MS = 5 * 60_000;

export class SharedBudgetStore implements BudgetStore {
  readonly #redis: BudgetBackend;
  readonly #fallback: Fallback;
  readonly #options: SharedBudgetOptions;
  readonly #id = randomUUID();
  readonly #beatMs: number;
  readonly #leaseMs: number;
  readonly #awayMs: number;
  readonly #beat: NodeJS.Timeout;
  readonly #channel: string;
  readonly #watchers = new Set<(keyId: string) => void>();
  /** Replicas holding a lease and away, at the last beat. */
  #alive = 1;
  #away = 0;
  #lastBeat = 0;
  /** When the last beat was sent: Redis may have run it (a stall, a lost reply), so the lease may hold until then plus leaseMs. */
  #beatSentAt = 0;
  /** When this replica last came back to Redis: the others count as there once they beat after it. */
  #backAt = 0;
  /**
   * Keys refused on the local share while this replica tells Redis what it did there (#back): a
   * send planned then would be told to nobody. They are woken when it is done.
   */
  #held: Set<string> | undefined;
  /** Why the last beat failed (what ready() tells start-up when Redis refused the first). */
  #beatError: unknown;
  #local: MemoryBudgetStore | undefined;
  /** When the local share may plan (the lease lapsed for the others), and since when it is in force. */
  #localFrom = 0;
  #lostAt = 0;
  /** Requests of this replica planned on Redis and not yet answered or released, by key. */
  readonly #out = new Map<string, number>();
  /** Keys whose command failed (Redis may yet run it, having stalled): reconciled on the way back. */
  readonly #failed = new Set<string>();
  /** A key whose command failed: the way back asks its slot (on a Cluster, the primary that failed). */
  #probeKey: string;
  /**
   * What this replica last learnt of each key from Redis: the most sends a window held at its last
   * reservation, and when; and until when Redis said nothing could go (a spent window or Remaining,
   * a pause). The local share starts from it should Redis be lost, so that N replicas planning alone
   * each add 1/N of what was left, not of the whole window, and nothing where nothing was left.
   * Kept for the keys used last (maxKeys).
   */
  readonly #known = new Map<string, { used: number; at: number; notBefore: number }>();

  constructor(options: SharedBudgetOptions) {
    this.#options = options;
    this.#beatMs = options.beatMs ?? BEAT_MS;
    this.#leaseMs = options.leaseMs ?? LEASE_MS;
    this.#awayMs = options.awayMs ?? AWAY_MS;
    this.#channel = `${options.prefix}:budget-answered`;
    this.#probeKey = `${options.prefix}:replicas`;
    const tag = randomBytes(6).toString('hex');
    this.#redis =
      options.backend?.(tag, this.#channel) ??
      new RedisBudget({
        client: options.client as RedisClient,
        prefix: options.prefix,
        tag,
        inflightMs: options.inflightMs,
        channel: this.#channel,
      });
    this.#fallback = createFallback({
      client: options.client,
      probe: () => options.client.pttl(this.#probeKey),
      onLost: (error) => this.#lost(error),
      onBack: () => this.#back(),
    });
    const subscriber = options.subscriber;
    if (subscriber !== undefined) {
      subscriber.on('message', (channel: string, keyId: string) => {
        if (channel === this.#channel) for (const watcher of this.#watchers) watcher(keyId);
      });
      // Subscribed again by ioredis after every reconnect (and, on a Cluster, on another node).
      subscriber.subscribe(this.#channel).catch(() => {});
    }
    this.#beat = setInterval(() => void this.#renew(), this.#beatMs);
    this.#beat.unref();
  }

  get epoch(): number {
    return this.#fallback.epoch;
  }

  /** Whether the budget plans on the local share now. */
  get degraded(): boolean {
    return this.#fallback.lost;
  }

  /** The replicas sharing the budget as last seen (alive and away). */
  get replicas(): number {
    return this.#alive + this.#away;
  }

  watch(listener: (keyId: string) => void): void {
    this.#watchers.add(listener);
  }

  /** Why the first beat failed, when ready() left the budget degraded (Redis may have refused it: an ACL). */
  get startError(): unknown {
    return this.#lastBeat === 0 ? this.#beatError : undefined;
  }

  /** Resolves once Redis has answered a first beat, or after `timeoutMs` (then degraded). */
  async ready(timeoutMs = 3_000): Promise<void> {
    const client = this.#options.client;
    if (client.status !== 'ready') {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          client.off('ready', done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        client.once('ready', done);
      });
    }
    await this.#renew();
    if (this.#lastBeat === 0) this.#fallback.lose(new Error('Redis did not answer at start'));
  }

  reserve(keyId: string, now: number): Promise<Reservation> {
    return this.#fallback.run(
      () =>
        this.#on(keyId, async () => {
          const epoch = this.#fallback.epoch;
          const planned = await this.#redis.reserve(keyId, this.#plan(), now);
          this.#learn(keyId, planned, now);
          if (!planned.ok) return { ok: false, room: planned.room };
          this.#out.set(keyId, (this.#out.get(keyId) ?? 0) + 1);
          return { ok: true, seq: planned.seq, room: planned.room, epoch };
        }),
      () => this.#reserveLocally(keyId, now),
    );
  }

  answer(keyId: string, seq: number, said: Answer, now: number, epoch: number, wantRoom = true): Promise<Recorded> {
    if (epoch !== this.epoch) {
      // Planned on the other side of a move: only a 429's pause carries over (to no request of this side).
      if (said.status !== 429) return Promise.resolve({ pauseMs: 0, room: openRoom(now), view: undefined });
      seq = 0;
    }
    return this.#fallback.run(
      () =>
        this.#on(keyId, async () => {
          const recorded = await this.#redis.answer(keyId, seq, said, now, this.#plan(), wantRoom);
          this.#done(keyId, seq);
          return recorded;
        }),
      () => this.#localStore().answer(keyId, seq, said, now),
    );
  }

  release(keyId: string, seq: number, now: number, epoch: number, unsentAt?: number): Promise<Room> {
    if (epoch !== this.epoch) return Promise.resolve(openRoom(now));
    return this.#fallback.run(
      () =>
        this.#on(keyId, async () => {
          const room = await this.#redis.release(keyId, seq, now, this.#plan(), true, unsentAt !== undefined);
          this.#done(keyId, seq);
          return room;
        }),
      () => this.#localStore().release(keyId, seq, now, 0, unsentAt),
    );
  }

  forget(keyId: string): Promise<void> {
    return this.#fallback.run(
      () => this.#redis.forget(keyId),
      () => this.#localStore().forget(keyId),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.#beat);
    this.#fallback.close();
  }

  /** The plan on Redis: the away replicas' local shares kept out. */
  #plan(): Plan {
    const replicas = this.#alive + this.#away;
    return this.#away === 0 ? this.#options.plan : { ...this.#options.plan, share: this.#alive / replicas };
  }

  #learn(keyId: string, planned: Planned, now: number): void {
    const known = this.#known.get(keyId) ?? { used: 0, at: now, notBefore: 0 };
    this.#known.delete(keyId);
    if (planned.ok) Object.assign(known, { used: planned.used, at: now });
    const { wait, until } = planned.room;
    known.notBefore = wait === 'window' || wait === 'gate' || wait === 'paused' ? until : 0;
    this.#known.set(keyId, known);
    if (this.#known.size > (this.#options.maxKeys ?? 10_000))
      this.#known.delete(this.#known.keys().next().value as string);
  }

  /** Runs a command of the key on Redis; one that fails may yet run there, so its key is reconciled on the way back. */
  async #on<T>(keyId: string, command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      this.#probeKey = `${this.#options.prefix}:{${keyId}}:budget`;
      if (this.#failed.size < (this.#options.maxKeys ?? 10_000)) this.#failed.add(keyId);
      throw error;
    }
  }

  /** A request planned on Redis is over (seq 0: one planned elsewhere, whose pause carried over). */
  #done(keyId: string, seq: number): void {
    const out = this.#out.get(keyId);
    if (seq === 0 || out === undefined) return;
    if (out > 1) this.#out.set(keyId, out - 1);
    else this.#out.delete(keyId);
  }

  #localStore(): MemoryBudgetStore {
    this.#local ??= this.#makeLocal();
    return this.#local;
  }

  #makeLocal(): MemoryBudgetStore {
    const { plan, maxKeys, idleMs } = this.#options;
    const share = plan.share / Math.max(1, this.#alive + this.#away);
    const local = new MemoryBudgetStore({
      plan: { ...plan, share },
      ...(maxKeys ? { maxKeys } : {}),
      ...(idleMs ? { idleMs } : {}),
    });
    // Each replica's part of what the windows already held, placed at the time it was seen (the
    // latest it can be, so it leaves the local log no earlier than the real sends leave the window),
    // and nothing where Redis said nothing could go.
    const now = this.#options.now();
    for (const [keyId, { used, at, notBefore }] of this.#known) {
      local.seed(keyId, Math.ceil(used * share), at, notBefore > now ? notBefore : 0);
    }
    return local;
  }

  async #reserveLocally(keyId: string, now: number): Promise<Reservation> {
    if (this.#held !== undefined) {
      if (this.#held.size < (this.#options.maxKeys ?? 10_000)) this.#held.add(keyId);
      return { ok: false, room: { free: 0, until: now + this.#beatMs, wait: 'window' } };
    }
    // Not before the others have noticed this replica's lease lapse; not past being away too long.
    if (now < this.#localFrom) return { ok: false, room: { free: 0, until: this.#localFrom, wait: 'window' } };
    if (now >= this.#lastBeat + this.#awayMs)
      return { ok: false, room: { free: 0, until: now + this.#beatMs, wait: 'window' } };
    const planned = await this.#localStore().reserve(keyId, now);
    return planned.ok ? { ...planned, epoch: this.epoch } : planned;
  }

  #lost(error: unknown): void {
    const now = this.#options.now();
    this.#lostAt = now;
    this.#localFrom = Math.max(now, this.#beatSentAt + this.#leaseMs + this.#beatMs);
    this.#local = this.#makeLocal();
    this.#options.onShared?.(false);
    this.#options.logger.warn(
      { reason: (error as Error).message, share: `1/${this.#alive + this.#away}`, inMs: this.#localFrom - now },
      'Redis unreachable: planning on a local share of the rate-limit budget until it returns',
    );
  }

  /**
   * Back on Redis: what the local share did is told to it, then the lease is renewed. Nothing is
   * planned on the local share meanwhile: a send planned during these round trips (more of them
   * on a Cluster's redirections) would be told to nobody, and the plan on Redis would count it not.
   */
  async #back(): Promise<void> {
    const held = new Set<string>();
    this.#held = held;
    try {
      await this.#rejoin();
    } finally {
      this.#held = undefined;
      for (const keyId of held) for (const watcher of this.#watchers) watcher(keyId);
    }
  }

  async #rejoin(): Promise<void> {
    const now = this.#options.now();
    this.#backAt = now;
    const local = this.#local;
    const happened = new Map<string, { pausedUntil: number; sent: readonly number[] }>();
    for (const keyId of [...this.#out.keys(), ...this.#failed]) happened.set(keyId, { pausedUntil: 0, sent: [] });
    for (const [keyId, pausedUntil, sent] of local?.happened(this.#lostAt, now) ?? []) {
      happened.set(keyId, { pausedUntil, sent });
    }
    const plan = this.#plan();
    await Promise.all(
      [...happened].map(([keyId, { pausedUntil, sent }]) => this.#redis.reconcile(keyId, pausedUntil, sent, now, plan)),
    );
    this.#out.clear();
    this.#failed.clear();
    await this.#renew(true);
    // A 429 answered on the local share meanwhile (nothing is planned there now, but answers come):
    // its pause holds on Redis too.
    const later = this.#options.now();
    const paused = [...(local?.happened(later, later) ?? [])].filter(
      ([keyId, pausedUntil]) => pausedUntil > (happened.get(keyId)?.pausedUntil ?? 0),
    );
    await Promise.all(paused.map(([keyId, pausedUntil]) => this.#redis.reconcile(keyId, pausedUntil, [], later, plan)));
    this.#local = undefined;
    this.#options.onShared?.(true);
    this.#options.logger.info({ keys: happened.size }, 'Redis is back: rate-limit budget shared across replicas again');
  }

  /** Renews the lease and counts the replicas; a failure while shared moves the budget to the local share. */
  async #renew(mustSucceed = false): Promise<void> {
    if (this.#fallback.lost && !mustSucceed) return;
    const now = this.#options.now();
    this.#beatSentAt = now;
    try {
      const member = await this.#redis.beat(this.#id, now, this.#leaseMs, this.#awayMs, this.#backAt);
      this.#alive = Math.max(1, member.alive);
      this.#away = member.away;
      this.#lastBeat = now;
    } catch (error) {
      this.#beatError = error;
      if (mustSucceed) throw error;
      this.#fallback.lose(error);
    }
  }
}

function openRoom(now: number): Room {
  return { free: 1, until: now, wait: undefined };
}
