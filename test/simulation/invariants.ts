/**
 * The budget's invariants (docs/architecture.md, "The key's budget"), checked on what one schedule
 * did: what reached the upstream, and what each operation was answered. Each returns the ways the
 * schedule broke it, as lines a person can read next to the shrunk schedule.
 */

import type { RateWindow } from '../../src/config.js';
import { BACKOFF_MS } from '../../src/gateway/upstream/limits/model.js';
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

export const INVARIANTS = [
  noRefusalFromHonest,
  neverBanned,
  withinPlan,
  answeredInTime,
  planUsed,
  retriedAfter429,
  createdOnce,
];

export function violationsOf(scenario: Scenario, result: SimResult): string[] {
  return INVARIANTS.flatMap((check) => check(scenario, result));
}
