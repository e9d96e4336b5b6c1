/**
 * The budget on Redis: model.ts's rules in Lua (lua/), one atomic round trip each, so the replicas
 * sharing a Redis share one budget. This module only runs them: it throws when Redis does not
 * answer, and shared-budget.ts decides what to do then. Every key of one API key carries its digest
 * as a hash tag, so each call touches one slot of a Redis Cluster.
 *
 * The scripts are one Redis function library (Redis 7.0 and later), loaded where a call finds it
 * missing (a new, restarted or flushed server; on a Cluster, every primary): its helpers are made
 * once when it loads instead of on every call, which was a sixth of a call's cost. Where Redis has
 * no functions (before 7.0), or its ACL allows scripts but not functions, the same Lua runs as
 * scripts by EVALSHA.
 */

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster } from 'ioredis';
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

const SCRIPTS = ['reserve', 'answer', 'release', 'reconcile'] as const;
type Name = (typeof SCRIPTS)[number];

const read = (file: string) => readFileSync(new URL(`./lua/${file}.lua`, import.meta.url), 'utf8');
const filled = (text: string) => text.replace(/\{\{(\w+)\}\}/g, (_, constant: string) => String(CONSTANTS[constant]));
/** A script's body as a function of (keys, args) on budget.lua's helpers. */
const body = (name: Name) => `local function ${name}(keys, args)\nbegin(keys, args)\n${read(name)}\nend\n`;

/** The function library, named after its text, so that replicas of two builds each call their own. */
export const LIBRARY = (() => {
  const code = filled(`${read('budget')}\n${SCRIPTS.map(body).join('')}`);
  const name = `petstore_budget_${createHash('sha1').update(code).digest('hex').slice(0, 12)}`;
  const registered = SCRIPTS.map((script) => `redis.register_function('${name}_${script}', ${script})`);
  return { name, code: `#!lua name=${name}\n${code}\n${registered.join('\n')}\n` };
})();

/** A script for EVALSHA: budget.lua and one body (beat.lua stands alone). */
export function script(name: Name | 'beat'): string {
  if (name === 'beat') return read(name);
  return filled(`local keys, args = KEYS, ARGV\n${read('budget')}\n${body(name)}return ${name}(keys, args)\n`);
}

type Command = (numKeys: number, ...args: (string | number | Buffer)[]) => Promise<number[]>;
const COMMANDS = {
  reserve: 'petstoreReserve',
  answer: 'petstoreAnswer',
  release: 'petstoreRelease',
  reconcile: 'petstoreReconcile',
  beat: 'petstoreBeat',
} as const;
type BudgetCommands = Record<(typeof COMMANDS)[keyof typeof COMMANDS], Command>;

/**
 * How a connection runs the library: as functions until a server says it has none or may not (then
 * as scripts, for good), and the load under way, shared by the calls that found it missing.
 */
interface Runner {
  functions: boolean;
  loading?: Promise<void>;
}
const runners = new WeakMap<RedisClient, Runner>();

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
/** A server without functions (before 7.0, or FCALL renamed away), or an ACL that denies them. */
const cannotCall = (error: unknown) => /unknown command|NOPERM/i.test(message(error));

/** Loads the library on the server (on a Cluster, every primary: a call may land on any). */
async function load(client: RedisClient): Promise<void> {
  const servers =
    'nodes' in client && typeof client.nodes === 'function' ? (client as Cluster).nodes('master') : [client];
  const loaded = await Promise.allSettled(
    servers.map((server) => server.call('FUNCTION', 'LOAD', 'REPLACE', LIBRARY.code)),
  );
  const failed = loaded.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
  // Refused anywhere, or loaded nowhere (a library Redis will not compile says why here, not as "not found").
  const refused = failed.find((result) => cannotCall(result.reason));
  if (refused) throw refused.reason;
  if (failed.length > 0 && failed.length === loaded.length) throw failed[0]?.reason;
}

/** Numbers as the scripts read them (struct.unpack of little-endian doubles): nothing to parse. */
function packed(...numbers: number[]): Buffer {
  const buffer = Buffer.allocUnsafe(numbers.length * 8);
  for (const [i, n] of numbers.entries()) buffer.writeDoubleLE(n, i * 8);
  return buffer;
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
    for (const [name, command] of Object.entries(COMMANDS) as [Name | 'beat', keyof BudgetCommands][]) {
      if (!(command in this.#redis)) this.#redis.defineCommand(command, { lua: script(name) });
    }
    if (!runners.has(options.client)) runners.set(options.client, { functions: true });
  }

  /** Runs one of the library's scripts on a key: FCALL (loading the library once where it is missing), or EVALSHA. */
  async #run(name: Name, keyId: string, args: readonly (string | Buffer)[]): Promise<number[]> {
    const keys = this.#keys(keyId);
    const runner = runners.get(this.#options.client) as Runner;
    for (let loaded = false; runner.functions; loaded = true) {
      try {
        return (await this.#redis.fcall(`${LIBRARY.name}_${name}`, 2, ...keys, ...args)) as number[];
      } catch (error) {
        if (cannotCall(error)) runner.functions = false;
        else if (loaded || !/Function not found/i.test(message(error))) throw error;
        else await this.#load(runner);
      }
    }
    return this.#redis[COMMANDS[name]](2, ...keys, ...args);
  }

  #load(runner: Runner): Promise<void> {
    runner.loading ??= load(this.#options.client)
      .catch((error: unknown) => {
        if (!cannotCall(error)) throw error;
        runner.functions = false;
      })
      .finally(() => {
        runner.loading = undefined;
      });
    return runner.loading;
  }

  #keys(keyId: string): [string, string] {
    // One hash tag per API key keeps its keys in one Redis Cluster slot, as a script needs.
    const { prefix } = this.#options;
    return [`${prefix}:{${keyId}}:budget`, `${prefix}:{${keyId}}:sends`];
  }

  /** The arguments every script of budget.lua starts with (its header says which). */
  #common(plan: Plan, now: number): (string | Buffer)[] {
    const { inflightMs, tag } = this.#options;
    const windows = plan.windows.flatMap((w) => [w.count, w.windowMs]);
    const since = plan.windows.map((w) => `(${now - w.windowMs}`);
    return [
      packed(now, plan.windows.length, plan.share, inflightMs, ...windows),
      tag,
      String(now),
      String(now + inflightMs),
      ...since,
    ];
  }

  async reserve(keyId: string, plan: Plan, now: number): Promise<Planned> {
    const [ok, seq, free, until, why, used] = await this.#run('reserve', keyId, this.#common(plan, now));
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
    const numbers = packed(
      seq,
      said.status,
      word.limit,
      word.remaining,
      word.resetAt,
      said.retryAfterMs ?? -1,
      said.jitter,
      wantRoom ? 1 : 0,
    );
    const { channel, tag } = this.#options;
    const reply = await this.#run('answer', keyId, [
      ...this.#common(plan, now),
      numbers,
      `${seq}@${tag}`,
      channel,
      keyId,
    ]);
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
    const { channel, tag } = this.#options;
    const args = [packed(seq, wantRoom ? 1 : 0, unsent ? 1 : 0), `${seq}@${tag}`, channel, keyId];
    const [free, until, why] = await this.#run('release', keyId, [...this.#common(plan, now), ...args]);
    return roomOf(free as number, until as number, why as number);
  }

  /**
   * Adds what happened elsewhere (on the local share) to the key: a pause until `pausedUntil`, the
   * sends `sent`; ends this replica's requests Redis still counts; the next request is a probe.
   */
  async reconcile(keyId: string, pausedUntil: number, sent: readonly number[], now: number, plan: Plan): Promise<void> {
    await this.#run('reconcile', keyId, [...this.#common(plan, now), String(pausedUntil), ...sent.map(String)]);
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
