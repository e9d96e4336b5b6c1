/**
 * One API key's budget as one model (docs/architecture.md, "The key's budget"): whether a request
 * may go now, and what each answer teaches. Pure functions over a plain state, with time passed in:
 * the in-memory store applies them as they are, and Redis runs the same rules as Lua (lua/), which
 * test/integration/gateway/budget-lua.test.ts holds to these on random sequences.
 *
 * The state owns every fact about a key's budget: the sends of the plan's windows, the upstream's
 * last word (the gate), the 429 pause, the requests in flight and how many may be (the congestion
 * window). Nothing else keeps a copy to decide with.
 */

import type { RateWindow } from '../../../config.js';

/** What the upstream's headers say of the key's tightest window; `resetAt` 0 when they say nothing usable. */
export interface Word {
  readonly limit: number;
  readonly remaining: number;
  /** Epoch ms. */
  readonly resetAt: number;
}

/** The upstream's last word: `remaining` sends may be planned after the `base`-th before `resetAt`. */
export interface Gate {
  readonly remaining: number;
  readonly resetAt: number;
  readonly base: number;
  /** The request whose answer set it; -1 for a probe's gate (unknown state: one request, then its answer decides). */
  readonly from: number;
  readonly limit: number;
  /** The Remaining that answer reported, to tell whether the next one counted our sends. */
  readonly reported: number;
}

export interface KeyBudget {
  /** Send times, ascending, for the longest window: one log serves every window. */
  readonly log: number[];
  /** Requests planned so far; each one's sequence number. */
  seq: number;
  gate: Gate | undefined;
  pausedUntil: number;
  /** The last sequence number planned before the latest 429: older answers describe a past it overtook. */
  pauseSeq: number;
  /** 429s in a row: the backoff doubles with each. */
  strikes: number;
  readonly inflight: Set<number>;
  /** How many of the key's requests may be in flight at once (slow start). */
  cwnd: number;
  /** The upstream's Remaining has been seen to count our sends: cwnd may grow past SAFE_CWND. */
  trusted: boolean;
}

export interface Plan {
  /** The plan's windows, shortest first ([] when throttling is off: only a pause applies). */
  readonly windows: readonly RateWindow[];
  /** Of each window and of the upstream's Remaining, what this store may plan (1, or a local share). */
  readonly share: number;
}

/** How long a probe's answer is awaited before another request may go without it. */
export const PROBE_MS = 5_000;
/**
 * Replicas sharing a key take turns (the stores shared across replicas; one replica alone never
 * meets it): the first refused for want of room has the next unit that frees to itself for this
 * long after it frees, its wake-up and one round trip. Without it, a replica whose wake-ups come
 * first (a clock ahead, a nearer Redis, a timer created earlier) takes every unit that frees while
 * it has requests waiting, and the other's wait their whole PETSTORE_MAX_WAIT.
 */
export const CLAIM_MS = 50;
/**
 * With this many requests or fewer left in the upstream's window they go one at a time: a client of
 * the key we cannot see may be spending the same window, and requests in flight when it runs out
 * would all meet 429s that count towards a ban.
 */
export const ONE_AT_A_TIME_BELOW = 5;
/**
 * In flight at once for a key whose upstream has not shown that its Remaining counts our sends. The
 * reference store bans a key after 10 requests in one 429 period: those in flight when the first 429
 * is sent, and at most as many sent before it arrives, stay below that.
 */
export const SAFE_CWND = 4;
/** In flight at once for a key the upstream has proven honest (the connection share bounds it too). */
export const MAX_CWND = 256;
/** The pause after a 429 whose Retry-After is absent, unreadable, 0 or past: 1 s, doubling per 429 in a row. */
export const BACKOFF_MS = 1_000;
export const BACKOFF_MAX_MS = 60_000;

export function newBudget(): KeyBudget {
  return {
    log: [],
    seq: 0,
    gate: undefined,
    pausedUntil: 0,
    pauseSeq: 0,
    strikes: 0,
    inflight: new Set(),
    cwnd: SAFE_CWND,
    trusted: false,
  };
}

/** Why nothing more may be planned now, and until when at the latest that holds. */
export type Wait =
  /** A 429's pause. */
  | 'paused'
  /** A window of the plan is full; `until` is when its oldest send leaves it. */
  | 'window'
  /** The upstream's Remaining is spent until its Reset. */
  | 'gate'
  /** An answer in flight decides (a probe's, one of the last few, or the congestion window): `until` is a time-out. */
  | 'answer';

/** How many more requests may be planned now; when none, why and until when. */
export interface Room {
  readonly free: number;
  readonly until: number;
  readonly wait: Wait | undefined;
}

/** Drops sends older than the longest window. */
function trim(budget: KeyBudget, plan: Plan, now: number): void {
  const longest = plan.windows.at(-1);
  if (longest === undefined) return;
  const old = firstAfter(budget.log, now - longest.windowMs);
  // Dropped in batches: a key near 100,000 a minute would otherwise move its whole log at every send.
  if (old >= TRIM_BATCH || old === budget.log.length) budget.log.splice(0, old);
}

/** Sends dropped from a log's front at once (those before stay, outside every window, until then). */
const TRIM_BATCH = 64;

/** The index of the log's first send after `at` (its length if none): a binary search, the log being ascending. */
function firstAfter(log: readonly number[], at: number): number {
  let low = 0;
  let high = log.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((log[middle] as number) > at) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** Sends of the log inside the window ending now. */
function inWindow(log: readonly number[], windowMs: number, now: number): number {
  return log.length - firstAfter(log, now - windowMs);
}

/** The gate in force at `now`: the upstream's word, or a probe's while its state is unknown. */
function gateAt(budget: KeyBudget, now: number): Gate {
  const gate = budget.gate;
  if (gate !== undefined && gate.resetAt > now) return gate;
  return { remaining: 1, resetAt: now + PROBE_MS, base: budget.seq, from: -1, limit: 0, reported: 0 };
}

/** The key's room now, after its pause, its windows, the upstream's gate and the congestion window. */
export function room(budget: KeyBudget, plan: Plan, now: number): Room {
  return measure(budget, plan, now).room;
}

/** The room, with what reserving needs to know of it: each window's sends, the gate in force and what it leaves. */
function measure(
  budget: KeyBudget,
  plan: Plan,
  now: number,
): { room: Room; used: number[]; gate?: Gate; left?: number } {
  if (budget.pausedUntil > now) return { room: { free: 0, until: budget.pausedUntil, wait: 'paused' }, used: [] };
  if (plan.windows.length === 0)
    return { room: { free: Number.POSITIVE_INFINITY, until: now, wait: undefined }, used: [] };
  trim(budget, plan, now);
  let free = Number.POSITIVE_INFINITY;
  let windowFree = now;
  const used: number[] = [];
  for (const { count, windowMs } of plan.windows) {
    const allowed = allowedOf(count, plan);
    const sends = inWindow(budget.log, windowMs, now);
    used.push(sends);
    if (sends >= allowed) {
      windowFree = Math.max(windowFree, (budget.log[budget.log.length - allowed] as number) + windowMs);
    }
    free = Math.min(free, allowed - sends);
  }
  if (free <= 0) return { room: { free: 0, until: windowFree, wait: 'window' }, used };
  const gate = gateAt(budget, now);
  const left = gate.remaining - (budget.seq - gate.base);
  if (left <= 0) return { room: { free: 0, until: gate.resetAt, wait: gate.from === -1 ? 'answer' : 'gate' }, used };
  const byAnswers = answersAllow(budget.cwnd, left, budget.inflight.size);
  if (byAnswers <= 0) return { room: { free: 0, until: now + PROBE_MS, wait: 'answer' }, used };
  return { room: { free: Math.min(free, left, byAnswers), until: now, wait: undefined }, used, gate, left };
}

/** Of a window's count, what this store may plan. */
function allowedOf(count: number, plan: Plan): number {
  return Math.max(1, Math.floor(count * plan.share));
}

/** How many more may go while `inflight` are out: the last few of a window one at a time, else the congestion window. */
function answersAllow(cwnd: number, left: number, inflight: number): number {
  return left <= ONE_AT_A_TIME_BELOW ? 1 - inflight : cwnd - inflight;
}

/**
 * Plans one request now when there is room: its sequence number and the room after it, or why
 * not. The room after is worked out from the room before (every window holds one more send, the gate
 * one fewer, one more is in flight), as the Lua does, without reading the log again.
 */
export function reserve(
  budget: KeyBudget,
  plan: Plan,
  now: number,
): { seq: number; room: Room; used: number } | { room: Room } {
  const before = measure(budget, plan, now);
  if (before.room.free < 1) return { room: before.room };
  budget.seq++;
  const { gate, left } = before;
  if (gate === undefined || left === undefined) return { seq: budget.seq, room: before.room, used: 0 };
  // The most sends any window holds with this one: where a local share starts from (shared-budget.ts).
  const used = Math.max(...before.used) + 1;
  let free = Number.POSITIVE_INFINITY;
  let windowFree = now;
  plan.windows.forEach(({ count, windowMs }, i) => {
    const sends = before.used[i] as number;
    const after = allowedOf(count, plan) - sends - 1;
    // Full with this one: its oldest send in the window (or this one) is the next to leave it.
    if (after === 0)
      windowFree = Math.max(
        windowFree,
        (sends === 0 ? now : (budget.log[budget.log.length - sends] as number)) + windowMs,
      );
    free = Math.min(free, after);
  });
  budget.gate = gate;
  budget.inflight.add(budget.seq);
  // Ascending, whatever the clock does: a send logged later than it went only stays longer.
  budget.log.push(Math.max(now, budget.log.at(-1) ?? now));
  const seq = budget.seq;
  if (free <= 0) return { seq, used, room: { free: 0, until: windowFree, wait: 'window' } };
  if (left - 1 <= 0) {
    return { seq, used, room: { free: 0, until: gate.resetAt, wait: gate.from === -1 ? 'answer' : 'gate' } };
  }
  const byAnswers = answersAllow(budget.cwnd, left - 1, budget.inflight.size);
  if (byAnswers <= 0) return { seq, used, room: { free: 0, until: now + PROBE_MS, wait: 'answer' } };
  return { seq, used, room: { free: Math.min(free, left - 1, byAnswers), until: now, wait: undefined } };
}

/** What an answer to the request `seq` said. */
export interface Answer {
  /** Its HTTP status; NO_ANSWER when none came in time (the request may still have counted). */
  readonly status: number;
  /** Its X-RateLimit-* headers (resetAt 0: none usable). */
  readonly word: Word;
  /** A 429's Retry-After in ms, clamped; undefined when absent or unreadable. */
  readonly retryAfterMs: number | undefined;
  /** In [0, 1): the backoff's jitter (the caller's random source, so a simulation replays). */
  readonly jitter: number;
}

/**
 * The status of a request written to the upstream that brought no answer in time. To the budget it
 * is a 429 without Retry-After: an upstream that refuses silently (or counts and never answers)
 * would otherwise get a probe every time-out, and a ban after ten in one 429 period; backing off
 * keeps that to a handful a minute.
 */
export const NO_ANSWER = 0;

/** Records an answer; returns how long a 429 (or no answer) paused the key (0 for any other answer). */
export function answer(budget: KeyBudget, plan: Plan, seq: number, said: Answer, now: number): number {
  const wasOut = budget.inflight.delete(seq);
  // Answers to requests planned before the last 429 describe a past the pause has overtaken.
  const fresh = seq > budget.pauseSeq;
  if (said.status === 429 || said.status === NO_ANSWER) return paused(budget, fresh, said, now);
  if (fresh) budget.strikes = 0;
  const { word } = said;
  const gate = budget.gate;
  if (word.resetAt === 0) {
    // No usable headers: what was known stands; a probe's gate gives way to the next probe.
    if (gate !== undefined && gate.from === -1 && seq === gate.base + 1) budget.gate = undefined;
  } else if (fresh && (gate === undefined || seq > gate.from || gate.resetAt <= now)) {
    if (gate !== undefined && gate.from >= 1 && seq > gate.from) learnTrust(budget, gate, word);
    // Its Remaining less the requests still out, which it may not count yet; of that, this store's
    // share. Below 0 when it counted some of them: kept so, for countedBefore to add them back exactly.
    const remaining = Math.floor((word.remaining - budget.inflight.size) * plan.share);
    budget.gate = { ...word, remaining, base: budget.seq, from: seq, reported: word.remaining };
  } else if (wasOut && fresh && countedBefore(gate, plan, seq, word)) {
    budget.gate = { ...gate, remaining: gate.remaining + 1 };
  }
  // Slow start: one more in flight per answer, past SAFE_CWND only for an upstream that counts.
  budget.cwnd = Math.min(budget.trusted ? MAX_CWND : SAFE_CWND, budget.cwnd + 1);
  return 0;
}

/**
 * Whether `seq`, answered after the gate's own answer, reached the upstream before it (it had more
 * left in the same window): then the gate's Remaining counted it, and kept it out as in flight as
 * well, and its place comes back. Without it, the last of a window's requests out together leave
 * their places unused until the upstream's Reset (6 s of 10 s, found by the simulation).
 */
function countedBefore(gate: Gate | undefined, plan: Plan, seq: number, word: Word): gate is Gate {
  return (
    gate !== undefined &&
    gate.from >= 1 &&
    seq < gate.from &&
    word.resetAt === gate.resetAt &&
    word.remaining > gate.reported &&
    // A local share took its part of the Remaining; the place's part is not worth the arithmetic.
    plan.share >= 1
  );
}

/**
 * Whether the upstream counts our sends: a later request's answer with less left says it does, one
 * with as much left (and some) says its Remaining cannot be believed, so at most SAFE_CWND go at once.
 */
function learnTrust(budget: KeyBudget, gate: Gate, word: Word): void {
  if (word.remaining < gate.reported) budget.trusted = true;
  else if (word.remaining === gate.reported && word.remaining > 0) budget.trusted = false;
}

/**
 * A 429 stops every send of the key until its Retry-After (RFC 9110 section 10.2.3) when that asks
 * for a wait; when it is absent, unreadable, 0 or past (a skewed clock), for an exponential backoff
 * with jitter from 1 s (RFC 6585 section 4; the spec asks for backoff), counted per key. It halves
 * the congestion window and withdraws trust; the next send after it is a probe.
 */
function paused(budget: KeyBudget, fresh: boolean, said: Answer, now: number): number {
  // One strike per pause: the other answers of a burst the pause overtook do not double it again
  // (20 requests out to a silent upstream would otherwise pause the key for a minute at once).
  if (fresh) budget.strikes++;
  const retryAfter = said.retryAfterMs ?? 0;
  const strikes = Math.max(1, budget.strikes);
  const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** (strikes - 1)) * (1 + said.jitter / 2);
  const pauseMs = retryAfter >= BACKOFF_MS ? retryAfter : Math.round(backoff);
  budget.pausedUntil = Math.max(budget.pausedUntil, now + pauseMs);
  if (fresh) {
    budget.gate = undefined;
    budget.pauseSeq = budget.seq;
    budget.cwnd = Math.max(1, Math.floor(budget.cwnd / 2));
    budget.trusted = false;
  }
  return pauseMs;
}

/** Ends a request that got no answer (a network failure, or never sent); a probe's lets the next one probe. */
export function release(budget: KeyBudget, seq: number, unsentAt?: number): void {
  const gate = budget.gate;
  // One never sent gives its place in the windows back (the first send logged at or after its
  // planning: its own, or one as old, whose leaving frees the window no earlier), and its part of
  // the upstream's Remaining when it was planned on the gate in force.
  if (budget.inflight.delete(seq) && unsentAt !== undefined) {
    const index = budget.log.findIndex((at) => at >= unsentAt);
    if (index !== -1) budget.log.splice(index, 1);
    if (gate !== undefined && gate.from !== -1 && seq > gate.base) {
      budget.gate = { ...gate, remaining: gate.remaining + 1 };
    }
  }
  if (gate !== undefined && gate.from === -1 && seq === gate.base + 1) budget.gate = undefined;
}

/** The key's budget in its tightest window as known: `extensions.rateLimit`. */
export interface BudgetView {
  readonly limit: number;
  readonly remaining: number;
  readonly used: number;
  /** Epoch ms when the window next frees a request; undefined when nothing is known to be spent. */
  readonly resetAt: number | undefined;
  /** A 429's pause is in force (until `resetAt`). */
  readonly paused?: true;
}

/** The first window as the log has it, or the upstream's word when that has less left; nothing left while paused. */
export function view(budget: KeyBudget, plan: Plan, now: number): BudgetView | undefined {
  let seen: BudgetView | undefined;
  const first = plan.windows[0];
  if (first !== undefined) {
    trim(budget, plan, now);
    const used = inWindow(budget.log, first.windowMs, now);
    const oldest = budget.log[budget.log.length - used];
    const resetAt = used > 0 && oldest !== undefined ? oldest + first.windowMs : undefined;
    seen = { limit: first.count, remaining: Math.max(0, first.count - used), used, resetAt };
  }
  const gate = budget.gate;
  if (gate !== undefined && gate.from !== -1 && gate.resetAt > now) {
    const left = Math.max(0, gate.remaining - (budget.seq - gate.base));
    if (seen === undefined || left < seen.remaining) {
      seen = { limit: gate.limit, remaining: left, used: Math.max(0, gate.limit - left), resetAt: gate.resetAt };
    }
  }
  if (seen !== undefined && budget.pausedUntil > now)
    seen = { ...seen, remaining: 0, resetAt: budget.pausedUntil, paused: true };
  return seen;
}

/** Whether forgetting the key could send a request the upstream would refuse (else it may be dropped). */
export function holdsBack(budget: KeyBudget, plan: Plan, now: number): boolean {
  if (budget.pausedUntil > now || budget.inflight.size > 0) return true;
  const gate = budget.gate;
  if (gate !== undefined && gate.resetAt > now && gate.remaining - (budget.seq - gate.base) <= 0) return true;
  return plan.windows.some(({ count, windowMs }) => {
    const used = inWindow(budget.log, windowMs, now);
    return used > 0 && used >= allowedOf(count, plan);
  });
}
