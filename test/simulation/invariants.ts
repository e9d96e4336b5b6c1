/**
 * The budget's invariants (docs/architecture.md, "The key's budget"), checked on what one schedule
 * did: what reached the upstream, and what each operation was answered. Each returns the ways the
 * schedule broke it, as lines a person can read next to the shrunk schedule.
 */

import type { RateWindow } from '../../src/config.js';
import { BACKOFF_MS, CLAIM_MS } from '../../src/gateway/upstream/limits/model.js';
import { type OpRecord, type SimResult, shareOf } from './run.js';
import type { Scenario } from './scenario.js';
import type { Arrival } from './sim-upstream.js';

/** Slack for an answer past its deadline: the virtual clock has no CPU time, only timers. */
const DEADLINE_SLACK_MS = 50;

/** The upstream tells the truth, on our clock, and nobody else spends the key: no 429 may happen. */
export function isHonest(scenario: Scenario): boolean {
  const { upstream } = scenario;
  return (
    upstream.headers === 'honest' &&
    upstream.skewMs === 0 &&
    !upstream.silent &&
    upstream.foreign.length === 0 &&
    scenario.faults.length === 0 &&
    scenario.plan.length > 0
  );
}

function ours(result: SimResult): Arrival[] {
  return result.upstream.arrivals.filter((arrival) => arrival.op !== 'foreign');
}

/** (a) An honest upstream never answers 429. */
export function noRefusalFromHonest(scenario: Scenario, result: SimResult): string[] {
  if (!isHonest(scenario)) return [];
  return ours(result)
    .filter((arrival) => arrival.status === 429)
    .slice(0, 3)
    .map((arrival) => `(a) an honest upstream answered 429 at +${arrival.at - scenario.startAt} ms (${arrival.op})`);
}

/** (b) No key is ever banned, whatever the upstream does. */
export function neverBanned(_scenario: Scenario, result: SimResult): string[] {
  if (!result.upstream.banned) return [];
  const first = result.upstream.arrivals.find((arrival) => arrival.code === 'key_banned');
  const refused = result.upstream.arrivals.filter((arrival) => arrival.status === 429).length;
  return [`(b) the key was banned at +${(first?.at ?? 0) - _scenario.startAt} ms (${refused} 429s in all)`];
}

/**
 * How much shorter than its window a span of sends is checked: a send leaves a few ms after the
 * time it was planned for (a store's round trip, a timer), and the plan is kept on planned times.
 */
const PLANNED_TO_SENT_MS = 5;

/**
 * (c) No span of a plan window's length holds more of our sends than its count. While the shared
 * store fails, the plan's own log may be lost (a flush, a failover) and is re-learnt from the
 * upstream's word: then no window of the upstream (as its clock aligns it) gets more than the plan.
 */
export function withinPlan(scenario: Scenario, result: SimResult): string[] {
  const violations: string[] = [];
  const byKey = new Map<string, Arrival[]>();
  for (const arrival of ours(result)) byKey.set(arrival.key, [...(byKey.get(arrival.key) ?? []), arrival]);
  for (const window of scenario.plan) {
    for (const arrivals of byKey.values()) {
      if (scenario.faults.length === 0) {
        const most = busiestSpan(
          arrivals.map((arrival) => arrival.sentAt),
          window,
        );
        if (most.count <= window.count) continue;
        violations.push(
          `(c) ${most.count} sends in ${window.windowMs} ms from +${most.from - scenario.startAt} ms; the plan allows ${window.count}`,
        );
      } else {
        const most = busiestUpstreamWindow(arrivals, window, scenario.upstream.skewMs);
        const bound = window.count + Math.ceil(window.count / scenario.replicas);
        if (most.count <= bound) continue;
        violations.push(
          `(c) ${most.count} requests reached the upstream's ${window.windowMs} ms window from +${most.from - scenario.startAt} ms; the plan allows ${window.count}, and ${bound} with store faults`,
        );
      }
    }
  }
  return violations;
}

/** How many of the upstream's fixed windows of `window` (aligned on its clock) lie wholly in [from, to). */
function fixedWindowsWithin(from: number, to: number, window: RateWindow, skewMs: number): number {
  const first = Math.ceil((from + skewMs) / window.windowMs);
  const end = Math.floor((to + skewMs) / window.windowMs);
  return Math.max(0, end - first);
}

/** The upstream's fixed window (aligned on its clock, as the reference store's) that got the most of `arrivals`. */
function busiestUpstreamWindow(arrivals: readonly Arrival[], window: RateWindow, skewMs: number) {
  const counts = new Map<number, number>();
  for (const arrival of arrivals) {
    const start = Math.floor((arrival.at + skewMs) / window.windowMs) * window.windowMs;
    counts.set(start, (counts.get(start) ?? 0) + 1);
  }
  let best = { count: 0, from: 0 };
  for (const [start, count] of counts) if (count > best.count) best = { count, from: start - skewMs };
  return best;
}

function busiestSpan(times: number[], window: RateWindow): { count: number; from: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let best = { count: 0, from: 0 };
  for (let first = 0, last = 0; last < sorted.length; last++) {
    while ((sorted[last] as number) - (sorted[first] as number) >= window.windowMs - PLANNED_TO_SENT_MS) first++;
    if (last - first + 1 > best.count) best = { count: last - first + 1, from: sorted[first] as number };
  }
  return best;
}

/** (d) Every operation is answered within PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT. */
export function answeredInTime(scenario: Scenario, result: SimResult): string[] {
  const limit = scenario.maxWaitMs + scenario.timeoutMs + DEADLINE_SLACK_MS;
  const violations: string[] = [];
  for (const op of result.ops) {
    if (op.end === undefined) violations.push(`(d) ${op.id} (from +${op.start - scenario.startAt} ms) never answered`);
    else if (op.end - op.start > limit) {
      violations.push(`(d) ${op.id} answered after ${op.end - op.start} ms; the limit is ${limit} ms`);
    }
  }
  return violations.slice(0, 3);
}

/**
 * (e) While demand exceeds the plan and nothing is faulty, at least 90% of the plan is used, and a
 * light client beside greedy ones is served (the share is work-conserving and fair).
 */
export function planUsed(scenario: Scenario, result: SimResult): string[] {
  if (!isHonest(scenario)) return [];
  const greedy = scenario.clients.filter((client) => client.kind === 'greedy');
  if (greedy.length === 0) return [];
  const violations: string[] = [];
  const first = scenario.plan[0] as RateWindow;
  // Measured from a window after demand began, so that every send the window holds then is one of
  // full demand (the sends of a burst before it free their places only a window later).
  const from = Math.max(...greedy.map((client) => client.from)) + scenario.startAt + first.windowMs;
  const to = Math.min(...greedy.map((client) => client.to)) + scenario.startAt;
  // The tightest window decides what the span allows; a window longer than the span allows its count.
  const span = to - from;
  if (span < 2 * first.windowMs) return [];
  // The plan, or the upstream's own limits where they are lower (its headers say so). The plan's
  // windows slide; the upstream's are fixed on its clock, and one that began before the span may
  // have had all its sends before it: of those, only the ones wholly inside the span count.
  const windows = [...scenario.plan, ...scenario.upstream.windows];
  const allowed = Math.min(
    ...scenario.plan.map((w) => w.count * Math.max(1, Math.floor(span / w.windowMs))),
    // An upstream window longer than the span allows its count in it (and does not bind).
    ...scenario.upstream.windows.map((w) =>
      w.windowMs >= span ? w.count : w.count * fixedWindowsWithin(from, to, w, scenario.upstream.skewMs),
    ),
  );
  const served = ours(result).filter(
    (arrival) => arrival.status < 400 && arrival.sentAt >= from && arrival.sentAt < to,
  ).length;
  if (served < 0.9 * allowed)
    violations.push(`(e) ${served} sends served in ${span} ms of full demand; the plan allows ${allowed}`);
  // A light client is owed a send when it waits a whole window: the sends of the window then go
  // one per window/count, each to the next client in turn (a shorter wait may fall in the window's
  // gap, its sends all gone to those who waited before it).
  if (scenario.maxWaitMs < first.windowMs) return violations;
  for (const client of scenario.clients) {
    if (client.kind !== 'steady') continue;
    // Across replicas the store gives turns by replica (sim-store.ts, the Lua's cl and nx), and each
    // replica's queue by client.
    const mine = result.ops.filter(
      (op) => op.client === client.id && op.start >= from && op.start < to - scenario.maxWaitMs,
    );
    const refused = mine.filter((op) => !op.ok);
    // Its share by those turns: the plan split among the replicas with clients, then among its replica's.
    const replicasWithClients = new Set(scenario.clients.map((other) => other.replica)).size;
    const besideIt = scenario.clients.filter((other) => other.replica === client.replica).length;
    const fairShare = Math.min(...windows.map((w) => w.count / w.windowMs)) / replicasWithClients / besideIt;
    // Light: three quarters of its share at most (at exactly its share, a turn may come too late).
    if (1 / client.everyMs <= 0.75 * fairShare && refused.length > 0.1 * mine.length) {
      violations.push(
        `(e) the light client ${client.id} was refused ${refused.length} of ${mine.length} times (${refused[0]?.code})`,
      );
    }
  }
  return violations;
}

/**
 * (f) An operation hit by one 429 whose Retry-After fits its wait is answered with data, when its
 * retry fits what it may send: its first try and one retry always; past that, its share (an
 * operation of as many requests as its share has no retry left, as one of 15 fields of share 15).
 */
export function retriedAfter429(scenario: Scenario, result: SimResult): string[] {
  const { upstream } = scenario;
  const light = scenario.clients.every((client) => client.kind === 'ops');
  if (
    !light ||
    upstream.headers !== 'honest' ||
    upstream.skewMs !== 0 ||
    upstream.silent ||
    // Another program spending the key may take the room the retry waited for.
    upstream.foreign.length > 0 ||
    !['seconds', 'date'].includes(upstream.retryAfter) ||
    scenario.faults.length > 0 ||
    scenario.plan.length === 0
  ) {
    return [];
  }
  const byOp = new Map<string, Arrival[]>();
  for (const arrival of ours(result)) byOp.set(arrival.op, [...(byOp.get(arrival.op) ?? []), arrival]);
  const violations: string[] = [];
  // After the pause, a probe's round trip (others of the key wait for its answer), then its own.
  const travel = 4 * (upstream.latencyMs + upstream.jitterMs) + DEADLINE_SLACK_MS;
  for (const op of result.ops) {
    if (op.ok || op.left || op.code !== 'RATE_LIMITED') continue;
    if (op.requests > 1 && op.requests >= shareOf(scenario)) continue;
    const refusals = (byOp.get(op.id) ?? []).filter((arrival) => arrival.status === 429);
    const only = refusals.length === 1 ? refusals[0] : undefined;
    if (only?.retryAfterMs === undefined) continue;
    // A Retry-After under a second pauses for the backoff instead: 1 s, and up to half again of jitter.
    const pauseMs = only.retryAfterMs >= BACKOFF_MS ? only.retryAfterMs : 1.5 * BACKOFF_MS;
    if (only.at + pauseMs + travel <= op.start + scenario.maxWaitMs) {
      violations.push(
        `(f) ${op.id} got one 429 (Retry-After ${only.retryAfterMs} ms at +${only.at - op.start} ms of its ${scenario.maxWaitMs} ms wait) and was answered RATE_LIMITED`,
      );
    }
  }
  return violations.slice(0, 3);
}

/** (g) A createPet is never sent twice, and never acknowledged wrongly. */
export function createdOnce(_scenario: Scenario, result: SimResult): string[] {
  const violations: string[] = [];
  const created = new Map<string, number>();
  for (const name of result.upstream.created) created.set(name, (created.get(name) ?? 0) + 1);
  for (const [name, times] of created) if (times > 1) violations.push(`(g) ${name} was created ${times} times`);
  for (const op of result.ops as OpRecord[]) {
    if (op.shape !== 'create' || op.name === undefined || op.end === undefined) continue;
    const made = created.has(op.name);
    if (op.ok && !made) violations.push(`(g) ${op.id} was acknowledged but never created`);
    if (!op.ok && made && op.outcome !== 'unknown') {
      violations.push(`(g) ${op.id} was created, yet answered ${op.code}${op.outcome ? ` (${op.outcome})` : ''}`);
    }
  }
  return violations;
}

/**
 * How long the key may sit idle while a request of it waits (beyond the spacing of a shared key's
 * turns and a replica's turn): a wake-up's timer, a store's round trips, an answer's way back.
 */
const IDLE_SLACK_MS = 250;

/**
 * (h) While an operation waits, the key is not left idle with room: nothing of it on the wire, and
 * every window of the plan and of the upstream with room for one more, for longer than the spacing
 * of its turns, a replica's turn and IDLE_SLACK_MS. A waiting request that nobody wakes (a tell
 * lost, a wake-up never set) is refused at its deadline with the plan unspent: (d) and (e) cannot
 * see that, since refusing is answering and one replica's loss is the other's gain.
 */
export function neverIdleWhileWaiting(scenario: Scenario, result: SimResult): string[] {
  if (!isHonest(scenario)) return [];
  const first = scenario.plan[0] as RateWindow;
  const idleMs = first.windowMs / first.count + CLAIM_MS + IDLE_SLACK_MS;
  const keyOf = new Map(scenario.clients.map((client) => [client.id, client.key]));
  const violations: string[] = [];
  for (const key of new Set(keyOf.values())) {
    const sent = ours(result)
      .filter((arrival) => arrival.key === key)
      .map((arrival) => arrival.sentAt)
      .sort((a, b) => a - b);
    const arrived = ours(result)
      .filter((arrival) => arrival.key === key)
      .map((arrival) => arrival.at)
      .sort((a, b) => a - b);
    const flights = result.upstream.flights.filter((flight) => flight.key === key);
    const ops = result.ops.filter((op) => keyOf.get(op.client) === key);
    const end = Math.max(...ops.map((op) => op.end ?? op.start));
    // Where anything below can change: an operation or a flight begins or ends, a send leaves a
    // plan window, an upstream window begins.
    const times = new Set<number>();
    for (const op of ops) times.add(op.start).add(op.end ?? end);
    for (const flight of flights) times.add(flight.from).add(flight.to ?? end);
    for (const at of sent) for (const window of scenario.plan) times.add(at + window.windowMs);
    for (const window of scenario.upstream.windows) {
      for (let at = Math.ceil(scenario.startAt / window.windowMs) * window.windowMs; at < end; at += window.windowMs) {
        times.add(at);
      }
    }
    const points = [...times].filter((t) => t <= end).sort((a, b) => a - b);
    // Begun by t and not ended by it (each a binary search, not a scan per point).
    const sorted = (values: number[]) => values.sort((a, b) => a - b);
    const [opStarts, opEnds] = [sorted(ops.map((op) => op.start)), sorted(ops.map((op) => op.end ?? end))];
    const [flightStarts, flightEnds] = [sorted(flights.map((f) => f.from)), sorted(flights.map((f) => f.to ?? end))];
    const openAt = (starts: number[], ends: number[], t: number) => upperBound(starts, t) - upperBound(ends, t);
    const idle = (t: number) =>
      openAt(opStarts, opEnds, t) > 0 &&
      openAt(flightStarts, flightEnds, t) === 0 &&
      scenario.plan.every((window) => countIn(sent, t - window.windowMs, t) < window.count) &&
      scenario.upstream.windows.every(
        (window) => countIn(arrived, Math.floor(t / window.windowMs) * window.windowMs - 1, t) < window.count,
      );
    let since: number | undefined;
    for (const t of points) {
      if (idle(t)) since ??= t;
      else if (since !== undefined) {
        if (t - since > idleMs) {
          violations.push(
            `(h) the key sat idle with room for ${t - since} ms from +${since - scenario.startAt} ms while an operation waited (at most ${Math.round(idleMs)} ms)`,
          );
        }
        since = undefined;
      }
    }
  }
  return violations.slice(0, 3);
}

/** How many of the sorted `times` lie in (from, to]. */
function countIn(times: readonly number[], from: number, to: number): number {
  return upperBound(times, to) - upperBound(times, from);
}

function upperBound(times: readonly number[], value: number): number {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((times[middle] as number) <= value) low = middle + 1;
    else high = middle;
  }
  return low;
}

export const INVARIANTS = [
  noRefusalFromHonest,
  neverBanned,
  withinPlan,
  answeredInTime,
  planUsed,
  retriedAfter429,
  createdOnce,
  neverIdleWhileWaiting,
];

export function violationsOf(scenario: Scenario, result: SimResult): string[] {
  return INVARIANTS.flatMap((check) => check(scenario, result));
}
