/**
 * Where each key's budget lives (model.ts says what it is): in this process, or in Redis shared by
 * the replicas (redis-budget.ts, with a local share while Redis is away: shared-budget.ts). Every
 * call is one atomic step of the model, so replicas sharing a store share one budget.
 */

import {
  type Answer,
  answer,
  type BudgetView,
  type Gate,
  holdsBack,
  type KeyBudget,
  newBudget,
  type Plan,
  type Room,
  release,
  reserve,
  room as roomOf,
  view,
} from './model.js';

export type Reservation =
  | {
      readonly ok: true;
      readonly seq: number;
      /** The room left after it: more requests of the key may go at once when `free` > 0. */
      readonly room: Room;
      /** The store that planned it (a store whose budget can move: see BudgetStore.epoch). */
      readonly epoch: number;
    }
  | { readonly ok: false; readonly room: Room };

/** What recording an answer left: a 429's pause, the key's room now (when asked for), and its budget as known. */
export interface Recorded {
  readonly pauseMs: number;
  readonly room: Room | undefined;
  readonly view: BudgetView | undefined;
}

export interface BudgetStore {
  /** Plans one request of the key now, or says why not and until when. */
  reserve(keyId: string, now: number): Promise<Reservation>;
  /**
   * Records the answer to a planned request, on the store that planned it (`epoch`); the key's room
   * after it only when `wantRoom` (requests of the key wait here: it costs Redis a read of the log).
   */
  answer(keyId: string, seq: number, said: Answer, now: number, epoch: number, wantRoom?: boolean): Promise<Recorded>;
  /**
   * Ends a planned request that got no answer (a network failure, or never sent). One never sent
   * (`unsentAt`: the time it was planned at) gives its place in the plan's windows back.
   */
  release(keyId: string, seq: number, now: number, epoch: number, unsentAt?: number): Promise<Room>;
  /** Forgets a key the upstream refused (401/403): no budget is kept for a key that does not exist. */
  forget(keyId: string): Promise<void>;
  /** Keys whose state this process holds (undefined where Redis holds it). */
  readonly size?: number;
  /**
   * Changes when the store's source of truth does (Redis lost, or back): an answer to a request the
   * other one planned is recorded nowhere. 0 for a store that never moves.
   */
  readonly epoch: number;
  /** A shared store: calls `listener` with a key's digest when another replica records an answer. */
  watch?(listener: (keyId: string) => void): void;
  close(): Promise<void>;
}

export interface MemoryBudgetOptions {
  readonly plan: Plan;
  /** A key idle this long is forgotten, unless a pause, a request in flight or a spent window holds it. */
  readonly idleMs?: number;
  /** Keys kept at most; past it the least recently used that may be forgotten go first. */
  readonly maxKeys?: number;
}

interface Held extends KeyBudget {
  lastUsed: number;
}

/**
 * The in-process store: one gateway, or a replica's local share while Redis is away. Client keys
 * are unbounded, so idle keys are forgotten, but never while that could cause a 429 (model.ts
 * `holdsBack`); a key forgotten is unknown again, and its next request is a probe.
 */
export class MemoryBudgetStore implements BudgetStore {
  readonly epoch = 0;
  readonly #keys = new Map<string, Held>();
  readonly #plan: Plan;
  readonly #idleMs: number;
  readonly #maxKeys: number;
  #lastSweep = 0;
  /** The count of keys at which a new one makes a sweep (the bound, or past it while too few may go). */
  #sweepAt: number;

  constructor(options: MemoryBudgetOptions) {
    this.#plan = options.plan;
    this.#idleMs = options.idleMs ?? 5 * 60_000;
    this.#maxKeys = options.maxKeys ?? 10_000;
    this.#sweepAt = this.#maxKeys;
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Requests of every key planned and not yet answered or released. */
  get inflight(): number {
    let count = 0;
    for (const budget of this.#keys.values()) count += budget.inflight.size;
    return count;
  }

  /**
   * What each key did here that the shared store must learn when a replica is back on it: its sends
   * since `since`, and its pause (0: none in force at `now`).
   */
  *happened(since: number, now: number): Iterable<[keyId: string, pausedUntil: number, sent: readonly number[]]> {
    for (const [keyId, budget] of this.#keys) {
      const sent = budget.log.filter((at) => at >= since);
      const pausedUntil = budget.pausedUntil > now ? budget.pausedUntil : 0;
      if (sent.length > 0 || pausedUntil > 0) yield [keyId, pausedUntil, sent];
    }
  }

  /**
   * Starts a key from what the shared store last said of it: `sends` sends at `at` (this store's part
   * of what its windows held), and nothing before `notBefore` (0: no such wait) but one probe then.
   */
  seed(keyId: string, sends: number, at: number, notBefore: number): void {
    const budget = this.#budget(keyId, at);
    const from = Math.max(at, budget.log.at(-1) ?? at);
    for (let i = 0; i < sends; i++) budget.log.push(from);
    if (notBefore > 0) budget.gate = seededGate(budget.seq, notBefore);
  }

  async reserve(keyId: string, now: number): Promise<Reservation> {
    const planned = reserve(this.#budget(keyId, now), this.#plan, now);
    return 'seq' in planned
      ? { ok: true, seq: planned.seq, room: planned.room, epoch: 0 }
      : { ok: false, room: planned.room };
  }

  async answer(keyId: string, seq: number, said: Answer, now: number): Promise<Recorded> {
    const budget = this.#budget(keyId, now);
    const pauseMs = answer(budget, this.#plan, seq, said, now);
    return { pauseMs, room: roomOf(budget, this.#plan, now), view: view(budget, this.#plan, now) };
  }

  async release(keyId: string, seq: number, now: number, _epoch = 0, unsentAt?: number): Promise<Room> {
    const budget = this.#keys.get(keyId);
    if (budget === undefined) return { free: 1, until: now, wait: undefined };
    release(budget, seq, unsentAt);
    return roomOf(budget, this.#plan, now);
  }

  async forget(keyId: string): Promise<void> {
    this.#keys.delete(keyId);
  }

  async close(): Promise<void> {
    this.#keys.clear();
  }

  #budget(keyId: string, now: number): Held {
    let budget = this.#keys.get(keyId);
    if (budget === undefined) {
      if (now - this.#lastSweep >= Math.min(this.#idleMs, 1_000) || this.#keys.size >= this.#sweepAt) this.#sweep(now);
      budget = Object.assign(newBudget(), { lastUsed: now });
      this.#keys.set(keyId, budget);
    }
    budget.lastUsed = now;
    return budget;
  }

  /**
   * Forgets idle keys, then, at the bound, the least recently used of those that may be forgotten,
   * down to nine tenths of it. A sweep sorts every key, so the next tenth of new keys must not each
   * make one: a client sending a new key with every request cost a sort of all 10,000 per request
   * when the sweep freed just one place.
   */
  #sweep(now: number): void {
    this.#lastSweep = now;
    for (const [keyId, budget] of this.#keys) {
      if (budget.lastUsed <= now - this.#idleMs && !holdsBack(budget, this.#plan, now)) this.#keys.delete(keyId);
    }
    const room = Math.ceil(this.#maxKeys / 10);
    if (this.#keys.size >= this.#maxKeys) {
      const byUse = [...this.#keys].sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
      for (const [keyId, budget] of byUse) {
        if (this.#keys.size <= this.#maxKeys - room) break;
        if (!holdsBack(budget, this.#plan, now)) this.#keys.delete(keyId);
      }
    }
    // Too few may be forgotten (in flight, paused, spent): the next sort waits for a tenth more keys.
    this.#sweepAt = Math.max(this.#maxKeys, this.#keys.size + room);
  }
}

/** Nothing left until `resetAt`: an upstream's word no answer replaces before then (answers still out were planned elsewhere). */
function seededGate(base: number, resetAt: number): Gate {
  return { remaining: 0, resetAt, base, from: Number.MAX_SAFE_INTEGER, limit: 0, reported: 0 };
}
