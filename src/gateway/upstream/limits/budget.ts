/**
 * The rate-limit budget of each API key (docs/architecture.md, "The key's budget"), as reservations of send times.
 *
 * Each plan window is a sliding log: at most `count` sends in any span of `windowMs`, so no
 * alignment of the upstream's fixed windows can see a burst of twice its limit across a boundary
 * (ours or its own). On top, the upstream's X-RateLimit-Remaining/Reset are the truth: after a
 * response, no more than Remaining requests are planned before Reset. A 429 pauses the key until
 * Retry-After. A key whose state is unknown (a cold start, or Redis flushed) sends one probe and
 * waits for its answer before planning more. `reserve` is atomic, so replicas sharing a store (Redis)
 * share one budget.
 */

import type { RateWindow } from '../../../config.js';

/**
 * A planned send time, or the time before which nothing can be planned: the caller gives up when
 * that is past its deadline, and otherwise asks again (the upstream's next answer may open the gate).
 */
export type Reservation =
  | {
      readonly ok: true;
      readonly at: number;
      readonly seq: number;
      /** Sends in the first (smallest) window's log, this one included, and when its oldest leaves it. */
      readonly used: number;
      readonly freeAt: number;
      /** The budget's `epoch` when it was made (a store whose budget can move: see BudgetStore.epoch). */
      readonly epoch?: number;
    }
  | {
      readonly ok: false;
      readonly retryAt: number;
      /**
       * Blocked only until an answer in flight arrives (a probe's, or that of the one request let go at
       * a time near the end of a window): past the deadline, the upstream's silence, not a spent budget.
       */
      readonly probing?: true;
    };

/**
 * What the upstream said in answer to the request with sequence number `seq`. Without usable
 * rate-limit headers, `resetAt` is 0: the answer keeps what was known, and ends a probe without
 * opening the gate (the next request is another probe).
 */
export interface Observation {
  readonly seq: number;
  readonly limit: number;
  readonly remaining: number;
  /** Reset of the window the headers describe, in ms since the epoch. */
  readonly resetAt: number;
}

/** The budget as far as the gateway knows it (`extensions.rateLimit`). */
export interface Quota {
  readonly limit: number;
  readonly remaining: number;
  readonly resetAt: number;
}

export interface BudgetStore {
  /** Reserves the earliest send time for one request of `keyId`; refuses when it would fall after `deadline`. */
  reserve(keyId: string, windows: readonly RateWindow[], now: number, deadline: number): Promise<Reservation>;
  /** Records the upstream's headers for a sent reservation; returns the key's quota as now known. */
  observe(keyId: string, observation: Observation, now: number): Promise<Quota>;
  /**
   * Ends a reservation that got no answer (a network failure, or never sent): it is no longer in
   * flight, and a probe that got no answer lets the next request probe at once.
   */
  release(keyId: string, seq: number): Promise<void>;
  /**
   * Stops every send of `keyId` until `until` (a 429's Retry-After). `seq` is the request the 429
   * answered: one planned before the pause in force only lengthens it, and leaves the probe that
   * follows that pause alone.
   */
  pause(keyId: string, until: number, seq: number): Promise<void>;
  pausedUntil(keyId: string): Promise<number>;
  /** Keys whose state this process holds (undefined where Redis holds it). */
  readonly size?: number;
  /**
   * A shared store: calls `listener` with a key's digest when another replica records an answer (or
   * a release) that a request refused with `probing` waits on, so it need not ask again on a timer.
   */
  watch?(listener: (keyId: string) => void): void;
  /** Whether `watch` hears those answers now (else: ask again on a timer). */
  readonly notifies?: boolean;
  /**
   * Changes when the store's source of truth does (Redis lost, or back): a reservation made before is
   * void, since the plan it belongs to is no longer the one in force. Undefined: never changes.
   */
  readonly epoch?: number;
  close(): Promise<void>;
}

/** How long a probe's answer is awaited before the next request may go without it. */
export const PROBE_MS = 5_000;

/**
 * With this many requests or fewer left in the upstream's window, they go one at a time: another
 * client of the key (one we cannot see) may be spending the same window, and requests already in
 * flight when it runs out would all meet 429s that count towards a ban.
 */
export const ONE_AT_A_TIME_BELOW = 5;

interface Gate {
  /** Requests that may be planned after `base` before `resetAt`. */
  remaining: number;
  resetAt: number;
  /** The sequence number planned last when the gate was set. */
  base: number;
  /** The request whose answer set it (-1 for a probe gate): older answers do not replace it. */
  from: number;
  limit: number;
}

interface KeyBudget {
  /** Send times per window length, ascending (reservations may lie in the future). */
  readonly logs: Map<number, number[]>;
  seq: number;
  gate: Gate | undefined;
  pausedUntil: number;
  /** The sequence number planned last before the latest 429. */
  pauseSeq: number;
  /** Reservations sent or about to be, with no answer yet. */
  readonly inflight: Set<number>;
  lastUsed: number;
}

export interface MemoryBudgetOptions {
  /** Fraction of each window's count this store may plan (the fallback's conservative share). */
  readonly share?: number;
  /** A key idle this long is forgotten, unless a pause or a spent window is in force for it. */
  readonly idleMs?: number;
  /** Keys kept at most; past it the least recently used that may be forgotten go first. */
  readonly maxKeys?: number;
}

/**
 * The in-process store: one gateway, or the fallback while Redis is unreachable. Client keys are
 * unbounded, so idle keys are forgotten, but never while forgetting could cause a 429: a key that is
 * paused, has requests in flight, or whose window is spent (by the upstream's word or its own log)
 * is kept until that ends. A key it has forgotten is unknown again: its next request is a probe.
 */
export class MemoryBudgetStore implements BudgetStore {
  readonly #keys = new Map<string, KeyBudget>();
  readonly #share: number;
  readonly #idleMs: number;
  readonly #maxKeys: number;
  #lastSweep = 0;
  /** The count of keys at which a new one makes a sweep (the bound, or past it while too few may go). */
  #sweepAt: number;
  /** Each window length's count, as the limiter plans with it (the same for every key). */
  readonly #windowCounts = new Map<number, number>();

  constructor(options: MemoryBudgetOptions = {}) {
    this.#share = options.share ?? 1;
    this.#idleMs = options.idleMs ?? 5 * 60_000;
    this.#maxKeys = options.maxKeys ?? 10_000;
    this.#sweepAt = this.#maxKeys;
  }

  /** Keys whose budget is held. */
  get size(): number {
    return this.#keys.size;
  }

  /** Reservations of every key sent or about to be, with no answer or release yet. */
  get inflight(): number {
    let count = 0;
    for (const budget of this.#keys.values()) count += budget.inflight.size;
    return count;
  }

  async reserve(keyId: string, windows: readonly RateWindow[], now: number, deadline: number): Promise<Reservation> {
    const budget = this.#budget(keyId, now);
    let at = Math.max(now, budget.pausedUntil);
    for (const { count, windowMs } of windows) {
      this.#windowCounts.set(windowMs, Math.max(1, Math.floor(count * this.#share)));
      const log = this.#log(budget, windowMs, now);
      const allowed = Math.max(1, Math.floor(count * this.#share));
      if (log.length >= allowed) at = Math.max(at, (log[log.length - allowed] as number) + windowMs);
      // First come, first served: a send is never planned before one already planned.
      at = Math.max(at, log.at(-1) ?? 0);
    }
    // With throttling off (no windows) only a 429's pause applies.
    let gate = budget.gate;
    if (windows.length > 0) {
      // Unknown upstream state (cold start, after a pause, past the last Reset): one probe, then its answer decides.
      if (gate === undefined || gate.resetAt <= at) gate = probeGate(budget.seq, at);
      const left = gate.remaining - (budget.seq - gate.base);
      if (left <= 0) {
        const probing = gate.from === -1;
        return probing ? { ok: false, retryAt: gate.resetAt, probing } : { ok: false, retryAt: gate.resetAt };
      }
      if (left <= ONE_AT_A_TIME_BELOW && budget.inflight.size > 0) {
        return { ok: false, retryAt: now + PROBE_MS, probing: true };
      }
    }
    if (at > deadline) return { ok: false, retryAt: at };
    budget.gate = gate;
    budget.seq++;
    budget.inflight.add(budget.seq);
    for (const { windowMs } of windows) this.#log(budget, windowMs, now).push(at);
    const first = windows[0] === undefined ? undefined : this.#log(budget, windows[0].windowMs, now);
    const used = first?.length ?? 0;
    const freeAt = first === undefined ? at : (first[0] as number) + (windows[0] as RateWindow).windowMs;
    return { ok: true, at, seq: budget.seq, used, freeAt };
  }

  async observe(keyId: string, observation: Observation, now: number): Promise<Quota> {
    const budget = this.#budget(keyId, now);
    budget.inflight.delete(observation.seq);
    // Answers to requests planned before the last 429 describe a past the pause has overtaken.
    const fresh = observation.seq > budget.pauseSeq;
    if (observation.resetAt === 0) {
      // No usable headers: what was known stands; a probe's gate gives way to the next probe.
      if (isProbeOf(budget.gate, observation.seq)) budget.gate = undefined;
    } else if (
      fresh &&
      (budget.gate === undefined || observation.seq > budget.gate.from || budget.gate.resetAt <= now)
    ) {
      budget.gate = gateOf(observation, budget.seq, budget.inflight.size, this.#share);
    }
    return budget.gate === undefined ? { limit: 0, remaining: 0, resetAt: 0 } : quotaOf(budget.gate, budget.seq, now);
  }

  /**
   * Starts a key from what the shared store last said of it (the fallback, when Redis goes away): its
   * pause, and no send before the Reset of the upstream window then in progress. What that window
   * has left cannot be split safely: this replica's view of it is as old as its last answer, and the
   * others may have planned since; sharing out a stale Remaining sends into a 429. From the Reset on,
   * one probe, then this store's share of what the upstream says.
   */
  seed(keyId: string, known: { resetAt: number; pausedUntil: number }, now: number): void {
    const budget = this.#budget(keyId, now);
    budget.pausedUntil = Math.max(budget.pausedUntil, known.pausedUntil);
    // No answer replaces it before its Reset: answers still arriving were planned on the shared budget.
    const from = Number.MAX_SAFE_INTEGER;
    if (known.resetAt > now) budget.gate = { remaining: 0, resetAt: known.resetAt, base: budget.seq, from, limit: 0 };
  }

  async release(keyId: string, seq: number): Promise<void> {
    const budget = this.#keys.get(keyId);
    if (budget === undefined) return;
    budget.inflight.delete(seq);
    if (isProbeOf(budget.gate, seq)) budget.gate = undefined;
  }

  async pause(keyId: string, until: number, seq: number): Promise<void> {
    const budget = this.#budget(keyId, Date.now());
    budget.pausedUntil = Math.max(budget.pausedUntil, until);
    if (seq <= budget.pauseSeq) return;
    budget.gate = undefined;
    budget.pauseSeq = budget.seq;
  }

  async pausedUntil(keyId: string): Promise<number> {
    return this.#keys.get(keyId)?.pausedUntil ?? 0;
  }

  async close(): Promise<void> {
    this.#keys.clear();
  }

  #budget(keyId: string, now: number): KeyBudget {
    let budget = this.#keys.get(keyId);
    if (budget === undefined) {
      if (now - this.#lastSweep >= Math.min(this.#idleMs, 1_000) || this.#keys.size >= this.#sweepAt) this.#sweep(now);
      budget = {
        logs: new Map(),
        seq: 0,
        gate: undefined,
        pausedUntil: 0,
        pauseSeq: 0,
        inflight: new Set(),
        lastUsed: now,
      };
      this.#keys.set(keyId, budget);
    }
    budget.lastUsed = now;
    return budget;
  }

  #log(budget: KeyBudget, windowMs: number, now: number): number[] {
    let log = budget.logs.get(windowMs);
    if (log === undefined) {
      log = [];
      budget.logs.set(windowMs, log);
    }
    let expired = 0;
    while (expired < log.length && (log[expired] as number) <= now - windowMs) expired++;
    if (expired > 0) log.splice(0, expired);
    return log;
  }

  /**
   * Forgets idle keys, then, at the bound, the least recently used of those that may be forgotten,
   * down to nine tenths of it. A sweep sorts every key, so the next tenth of new keys must not each
   * make one: a client sending a new key with every request (refused keys, a spray of them) cost a
   * sort of all 10,000 per request when the sweep freed just one place.
   */
  #sweep(now: number): void {
    this.#lastSweep = now;
    for (const [keyId, budget] of this.#keys) {
      if (budget.lastUsed <= now - this.#idleMs && this.#forgettable(budget, now)) this.#keys.delete(keyId);
    }
    const room = Math.ceil(this.#maxKeys / 10);
    if (this.#keys.size >= this.#maxKeys) {
      const byUse = [...this.#keys].sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
      for (const [keyId, budget] of byUse) {
        if (this.#keys.size <= this.#maxKeys - room) break;
        if (this.#forgettable(budget, now)) this.#keys.delete(keyId);
      }
    }
    // Too few may be forgotten (in flight, paused, spent): the next sort waits for a tenth more keys.
    this.#sweepAt = Math.max(this.#maxKeys, this.#keys.size + room);
  }

  /** Whether forgetting a key can never send a request the upstream would refuse. */
  #forgettable(budget: KeyBudget, now: number): boolean {
    if (budget.pausedUntil > now || budget.inflight.size > 0) return false;
    const gate = budget.gate;
    if (gate !== undefined && gate.resetAt > now && gate.remaining - (budget.seq - gate.base) <= 0) return false;
    for (const [windowMs, log] of budget.logs) {
      const recent = log.filter((at) => at > now - windowMs).length;
      if (recent > 0 && recent >= this.#fullAt(windowMs)) return false;
    }
    return true;
  }

  /** Entries of a window's log that make it full: set by the windows the last reservation saw. */
  #fullAt(windowMs: number): number {
    return this.#windowCounts.get(windowMs) ?? Number.POSITIVE_INFINITY;
  }
}

/** Unknown upstream state: one request may go, and its answer sets the real gate. */
function probeGate(seq: number, at: number): Gate {
  return { remaining: 1, resetAt: at + PROBE_MS, base: seq, from: -1, limit: 0 };
}

/** Whether `gate` is a probe's gate and `seq` that probe (the one reservation it allows). */
function isProbeOf(gate: Gate | undefined, seq: number): boolean {
  return gate !== undefined && gate.from === -1 && seq === gate.base + 1;
}

/**
 * The gate an answer sets: its Remaining less the other requests still in flight, which it may not
 * count yet, from the latest reservation on; of that, this store's share.
 */
function gateOf(observation: Observation, seq: number, inflight: number, share: number): Gate {
  // A local share (Redis away): the other replicas may spend the same Remaining, so each takes its part.
  const remaining = Math.max(0, Math.floor((observation.remaining - inflight) * share));
  return { remaining, resetAt: observation.resetAt, base: seq, from: observation.seq, limit: observation.limit };
}

/** The upstream's view, less what was planned since. */
export function quotaOf(gate: Gate, seq: number, now: number): Quota {
  if (gate.limit === 0) return { limit: 0, remaining: 0, resetAt: 0 };
  if (gate.resetAt <= now) return { limit: gate.limit, remaining: gate.limit, resetAt: gate.resetAt };
  return { limit: gate.limit, remaining: Math.max(0, gate.remaining - (seq - gate.base)), resetAt: gate.resetAt };
}
