/**
 * The budget on Redis: model.ts's rules as Lua scripts (lua/), one atomic round trip each, so the
 * replicas sharing a Redis share one budget. This module only runs them: it throws when Redis does
 * not answer, and shared-budget.ts decides what to do then. Every key of one API key carries its
 * digest as a hash tag, so each script touches one slot of a Redis Cluster.
 */

import { readFileSync } from 'node:fs';
import type { RedisClient } from '../redis/connection.js';
import type { Recorded } from './budget.js';
import {
  type Answer,
  BACKOFF_MAX_MS,
  BACKOFF_MS,
  type BudgetView,
  CLAIM_MS,
  MAX_CWND,
  ONE_AT_A_TIME_BELOW,
  type Plan,
  PROBE_MS,
  type Room,
  SAFE_CWND,
  type Wait,
} from './model.js';

const CONSTANTS: Record<string, number> = {
  PROBE_MS,
  ONE_AT_A_TIME_BELOW,
  SAFE_CWND,
  MAX_CWND,
  BACKOFF_MS,
  BACKOFF_MAX_MS,
  CLAIM_MS,
};

/** A script of lua/: the model's Lua (budget.lua) and its own body, the model's constants filled in (exported for bench/cost.ts). */
export function script(name: 'reserve' | 'answer' | 'release' | 'reconcile' | 'beat'): string {
  const read = (file: string) => readFileSync(new URL(`./lua/${file}.lua`, import.meta.url), 'utf8');
  const text = name === 'beat' ? read(name) : `${read('budget')}\n${read(name)}`;
  return text.replace(/\{\{(\w+)\}\}/g, (_, constant: string) => String(CONSTANTS[constant]));
}

type Command = (numKeys: number, ...args: (string | number)[]) => Promise<number[]>;
interface BudgetCommands {
  petstoreReserve: Command;
  petstoreAnswer: Command;
  petstoreRelease: Command;
  petstoreReconcile: Command;
  petstoreBeat: Command;
}

const WAITS: readonly (Wait | undefined)[] = [undefined, 'paused', 'window', 'gate', 'answer'];

function roomOf(free: number, until: number, why: number): Room {
  return { free: free === -1 ? Number.POSITIVE_INFINITY : free, until, wait: WAITS[why] };
}

export interface RedisBudgetOptions {
  readonly client: RedisClient;
  /** Key prefix, so several gateways (or tests) can share one Redis. */
  readonly prefix: string;
  /** Marks this replica's requests in flight and sends, so it can find its own when it comes back. */
  readonly tag: string;
  /** How long a request counts as in flight when its replica never reports back (it crashed). */
  readonly inflightMs: number;
  /** The channel a script tells waiters on another replica of an answer. */
  readonly channel: string;
}

/** A reservation on Redis: planned (its seq, and the most sends a window holds with it), or not; the room after. */
export interface Planned {
  readonly ok: boolean;
  readonly seq: number;
  readonly room: Room;
  readonly used: number;
}

export interface Member {
  readonly alive: number;
  readonly away: number;
}

export class RedisBudget {
  readonly #redis: RedisClient & BudgetCommands;
  readonly #options: RedisBudgetOptions;

  constructor(options: RedisBudgetOptions) {
    this.#options = options;
    this.#redis = options.client as RedisClient & BudgetCommands;
    // EVALSHA, and EVAL once per server that lacks the script (a promoted replica, a restarted one).
    for (const [command, name] of [
      ['petstoreReserve', 'reserve'],
      ['petstoreAnswer', 'answer'],
      ['petstoreRelease', 'release'],
      ['petstoreReconcile', 'reconcile'],
      ['petstoreBeat', 'beat'],
    ] as const) {
      if (!(command in this.#redis)) this.#redis.defineCommand(command, { lua: script(name) });
    }
  }

  #keys(keyId: string): [string, string] {
    // One hash tag per API key keeps its keys in one Redis Cluster slot, as a script needs.
    const { prefix } = this.#options;
    return [`${prefix}:{${keyId}}:budget`, `${prefix}:{${keyId}}:sends`];
  }

  #common(plan: Plan, now: number): (string | number)[] {
    const windows = plan.windows.flatMap((w) => [w.count, w.windowMs]);
    return [now, this.#options.tag, plan.windows.length, ...windows, plan.share, this.#options.inflightMs];
  }

  async reserve(keyId: string, plan: Plan, now: number): Promise<Planned> {
    const keys = this.#keys(keyId);
    const [ok, seq, free, until, why, used] = await this.#redis.petstoreReserve(2, ...keys, ...this.#common(plan, now));
    const room = roomOf(free as number, until as number, why as number);
    return { ok: ok === 1, seq: seq as number, room, used: used as number };
  }

  async answer(
    keyId: string,
    seq: number,
    said: Answer,
    now: number,
    plan: Plan,
    wantRoom: boolean,
  ): Promise<Recorded> {
    const { word } = said;
    const args = [seq, said.status, word.limit, word.remaining, word.resetAt, said.retryAfterMs ?? -1, said.jitter];
    const reply = await this.#redis.petstoreAnswer(
      2,
      ...this.#keys(keyId),
      ...this.#common(plan, now),
      ...args,
      wantRoom ? 1 : 0,
      this.#options.channel,
      keyId,
    );
    const [pauseMs, free, until, why, limit, remaining, used, reset, paused] = reply as number[] as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const view: BudgetView | undefined =
      limit === -1
        ? undefined
        : {
            limit,
            remaining,
            used,
            resetAt: reset === -1 ? undefined : reset,
            ...(paused === 1 ? { paused: true } : {}),
          };
    return { pauseMs, room: wantRoom ? roomOf(free, until, why) : undefined, view };
  }

  async release(keyId: string, seq: number, now: number, plan: Plan, wantRoom: boolean, unsent = false): Promise<Room> {
    const args = [seq, wantRoom ? 1 : 0, this.#options.channel, keyId, unsent ? 1 : 0];
    const [free, until, why] = await this.#redis.petstoreRelease(
      2,
      ...this.#keys(keyId),
      ...this.#common(plan, now),
      ...args,
    );
    return roomOf(free as number, until as number, why as number);
  }

  /**
   * Adds what happened elsewhere (on the local share) to the key: a pause until `pausedUntil`, the
   * sends `sent`; ends this replica's requests Redis still counts; the next request is a probe.
   */
  async reconcile(keyId: string, pausedUntil: number, sent: readonly number[], now: number, plan: Plan): Promise<void> {
    await this.#redis.petstoreReconcile(2, ...this.#keys(keyId), ...this.#common(plan, now), pausedUntil, ...sent);
  }

  async forget(keyId: string): Promise<void> {
    await this.#redis.del(...this.#keys(keyId));
  }

  /**
   * Renews this replica's lease; says how many replicas hold one, and how many are away. A replica
   * counts as holding one only if it beat at or after `since` (0: any time within the lease).
   */
  async beat(id: string, now: number, leaseMs: number, awayMs: number, since = 0): Promise<Member> {
    const key = `${this.#options.prefix}:replicas`;
    const [alive, away] = await this.#redis.petstoreBeat(1, key, now, id, leaseMs, awayMs, since);
    return { alive: alive as number, away: away as number };
  }
}
