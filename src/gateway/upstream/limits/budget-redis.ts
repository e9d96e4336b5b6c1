/**
 * The budget shared by gateway replicas through Redis: the same algorithm as MemoryBudgetStore,
 * as Lua scripts, so one reservation is one atomic round trip. A flushed or restarted Redis loses
 * the state: the next reservation finds no gate and sends one probe, so recovery needs nothing
 * from us. While Redis is unreachable, each replica plans on a local store at 1/N of the plan,
 * N being the replicas it last saw, and it rejoins as soon as Redis answers again.
 */

import { randomBytes, randomUUID } from 'node:crypto';
import type { RateWindow } from '../../../config.js';
import type { Logger } from '../../observability/logger.js';
import type { RedisClient, RedisConnection } from '../redis-connection.js';
import {
  type BudgetStore,
  MemoryBudgetStore,
  type Observation,
  ONE_AT_A_TIME_BELOW,
  PROBE_MS,
  type Quota,
  type Reservation,
} from './budget.js';

/**
 * A request refused until an answer in flight arrives (a probe's, or one of the window's last few)
 * waits for that answer, not for a timer: the script that records the answer (or the release of a
 * request that got none) publishes the key's digest when someone waits, and each replica wakes its
 * waiters for that key. Without it a waiter on another replica's answer asked Redis again every
 * 100–800 ms. Published only when RESERVE marked a waiter, so an answer nobody waits for costs no
 * message. ARGV[at] is the channel, ARGV[at + 1] the key's digest.
 */
const WAKE = (at: number) =>
  `if redis.call('HDEL', KEYS[1], 'wait') == 1 then redis.call('PUBLISH', ARGV[${at}], ARGV[${at + 1}]) end`;

// KEYS: state hash, in-flight zset, then one log per window. ARGV: now, deadline, probe ms,
// in-flight ttl ms, one-at-a-time threshold, the replica's tag, then count and window ms per window.
// A request in flight is the member seq@tag, so a fence can find a replica's own.
const RESERVE = `
local now, deadline, probe, flight = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local low, tag = tonumber(ARGV[5]), ARGV[6]
-- Refused until an answer in flight arrives: marked, so that answer's script tells the waiters (below).
local function waiting(result)
  redis.call('HSET', KEYS[1], 'wait', 1)
  if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], probe) end
  return result
end
local st = redis.call('HMGET', KEYS[1], 'pause', 'seq', 'gbase', 'grem', 'greset', 'gfrom')
local at = math.max(now, tonumber(st[1] or '0'))
local seq = tonumber(st[2] or '0')
local ttl = probe
for i = 3, #KEYS do
  local count, w = tonumber(ARGV[2 * i + 1]), tonumber(ARGV[2 * i + 2])
  ttl = math.max(ttl, w)
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - w)
  local len = redis.call('ZCARD', KEYS[i])
  if len >= count then
    local e = redis.call('ZRANGE', KEYS[i], len - count, len - count, 'WITHSCORES')
    at = math.max(at, tonumber(e[2]) + w)
  end
  if len > 0 then
    local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
    at = math.max(at, tonumber(last[2]))
  end
end
-- With throttling off (no windows) only a 429's pause applies.
local gbase, grem, greset, gfrom
if #KEYS > 2 then
  gbase, grem, greset = tonumber(st[3] or ''), tonumber(st[4] or ''), tonumber(st[5] or '0')
  gfrom = tonumber(st[6] or '-1')
  -- Unknown upstream state (cold start, flushed, after a pause, past the last Reset): one probe first.
  if gbase == nil or greset <= at then
    gbase, grem, greset, gfrom = seq, 1, at + probe, -1
    if at <= deadline then
      redis.call('HSET', KEYS[1], 'gbase', gbase, 'gfrom', -1, 'grem', 1, 'greset', greset, 'glimit', 0)
    end
  end
  local left = grem - (seq - gbase)
  if left <= 0 then
    if gfrom == -1 then return waiting({0, greset, 1}) end
    return {0, greset, 0}
  end
  -- The last few of a window go one at a time (see ONE_AT_A_TIME_BELOW).
  if left <= low then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    if redis.call('ZCARD', KEYS[2]) > 0 then return waiting({0, now + probe, 1}) end
  end
end
if at > deadline then return {0, at, 0} end
seq = seq + 1
redis.call('HSET', KEYS[1], 'seq', seq)
redis.call('PEXPIRE', KEYS[1], ttl + at - now)
redis.call('ZADD', KEYS[2], at + flight, seq .. '@' .. tag)
redis.call('PEXPIRE', KEYS[2], at - now + flight)
for i = 3, #KEYS do
  redis.call('ZADD', KEYS[i], at, seq)
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 * i + 2]) + at - now)
end
-- The first (smallest) window: how many sends it holds, and when its oldest leaves it; and what the
-- gate leaves after this one, until when (what the replica falls back on should Redis fail over).
if #KEYS > 2 then
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {1, at, seq, redis.call('ZCARD', KEYS[3]), tonumber(oldest[2]) + tonumber(ARGV[8]), grem - (seq - gbase), greset}
end
return {1, at, seq, 0, at, -1, 0}
`;

// KEYS: state hash, in-flight zset. ARGV: seq, limit, remaining, reset ms (0: no usable headers), now,
// then the channel and key id to tell waiters on (see WAKE), then the replica's tag.
const OBSERVE = `
local seq, limit, remaining, reset, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
${WAKE(6)}
redis.call('ZREM', KEYS[2], ARGV[1] .. '@' .. ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local inflight = redis.call('ZCARD', KEYS[2])
local st = redis.call('HMGET', KEYS[1], 'seq', 'gbase', 'gfrom', 'greset', 'grem', 'glimit', 'pseq')
local cur = tonumber(st[1] or '0')
local gbase, gfrom, greset = tonumber(st[2] or ''), tonumber(st[3] or '-1'), tonumber(st[4] or '0')
-- Answers to requests planned before the last 429 (or before a flush) describe a past since overtaken.
local fresh = seq > tonumber(st[7] or '-1') and seq <= cur
if reset == 0 then
  -- No usable headers: what was known stands; a probe's gate gives way to the next probe.
  if gbase ~= nil and gfrom == -1 and seq == gbase + 1 then
    redis.call('HDEL', KEYS[1], 'gbase', 'gfrom', 'grem', 'greset', 'glimit')
    return {0, 0, 0}
  end
  if gbase == nil then return {0, 0, 0} end
  remaining, limit = tonumber(st[5]), tonumber(st[6])
elseif fresh and (gbase == nil or seq > gfrom or greset <= now) then
  remaining = math.max(0, remaining - inflight)
  redis.call('HSET', KEYS[1], 'gbase', cur, 'gfrom', seq, 'grem', remaining, 'greset', reset, 'glimit', limit)
  gbase, greset = cur, reset
elseif gbase == nil then
  return {0, 0, 0}
else
  remaining, limit = tonumber(st[5]), tonumber(st[6])
end
if limit == 0 then return {0, 0, 0} end
if greset <= now then return {limit, limit, greset} end
return {limit, math.max(0, remaining - (cur - gbase)), greset}
`;

// KEYS: state hash, in-flight zset. ARGV: seq, the channel and key id to tell waiters on, the replica's tag.
const RELEASE = `
local seq = tonumber(ARGV[1])
${WAKE(2)}
redis.call('ZREM', KEYS[2], ARGV[1] .. '@' .. ARGV[4])
local st = redis.call('HMGET', KEYS[1], 'gbase', 'gfrom')
-- A probe that got no answer lets the next request probe at once.
if tonumber(st[2] or '0') == -1 and tonumber(st[1] or '-2') + 1 == seq then
  redis.call('HDEL', KEYS[1], 'gbase', 'gfrom', 'grem', 'greset', 'glimit')
end
return 1
`;

// KEYS: state hash. ARGV: until, now, seq of the request the 429 answered.
const PAUSE = `
local p = tonumber(redis.call('HGET', KEYS[1], 'pause') or '0')
if tonumber(ARGV[1]) > p then redis.call('HSET', KEYS[1], 'pause', ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[1]) - tonumber(ARGV[2]) + 60000))
-- A 429 to a request planned before the pause in force only lengthens it.
if tonumber(ARGV[3]) <= tonumber(redis.call('HGET', KEYS[1], 'pseq') or '-1') then return 0 end
redis.call('HDEL', KEYS[1], 'gbase', 'gfrom', 'grem', 'greset', 'glimit')
redis.call('HSET', KEYS[1], 'pseq', tonumber(redis.call('HGET', KEYS[1], 'seq') or '0'))
return 1
`;

// KEYS: state hash, in-flight zset. ARGV: until, now, the replica's tag. A replica back on Redis
// after an outage or a failover: what Redis holds may be older than what happened (writes lost with
// the old primary, sends made on the local share), so the key's gate is dropped (the next send is one
// probe, whose answer is the upstream's word), its pause is at least `until`, answers to requests
// planned before now are stale, and this replica's requests from before no longer count as in
// flight: their answers are recorded nowhere (the budget moved while they were out), and left here
// they would hold the last few of every window one at a time until they expire. Among them are
// reservations it never heard of: a command it timed out on that Redis ran late, having stalled (a
// DEBUG SLEEP, a slow script), and before this fence, which the same connection sends after it.
// They are found by the replica's tag. Other replicas' requests in flight stay counted: they may
// still be out.
const FENCE = `
local p = tonumber(redis.call('HGET', KEYS[1], 'pause') or '0')
local till, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local seq = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
redis.call('HDEL', KEYS[1], 'gbase', 'gfrom', 'grem', 'greset', 'glimit')
redis.call('HSET', KEYS[1], 'pseq', seq, 'pause', math.max(p, till))
-- At least a minute: a state Redis had lost is made here anew, with no expiry of its own.
redis.call('PEXPIRE', KEYS[1], math.max(redis.call('PTTL', KEYS[1]), till - now + 60000, 60000))
local suffix = '@' .. ARGV[3]
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if string.sub(member, -#suffix) == suffix then redis.call('ZREM', KEYS[2], member) end
end
return 1
`;

// KEYS: the replicas zset. ARGV: now, this replica's id, how long an announcement counts, key ttl.
// One command a beat (it was a MULTI of four, six commands on the wire).
const BEAT = `
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return redis.call('ZCARD', KEYS[1])
`;

interface BudgetCommands {
  petstoreBeat(numKeys: number, ...args: (string | number)[]): Promise<number>;
  petstoreFence(numKeys: number, ...args: (string | number)[]): Promise<number>;
  petstoreReserve(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  petstoreObserve(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  petstorePause(numKeys: number, ...args: (string | number)[]): Promise<number>;
  petstoreRelease(numKeys: number, ...args: (string | number)[]): Promise<number>;
}

export interface RedisBudgetOptions {
  /** Made by createRedisConnection (one server, Cluster or Sentinel); closed by whoever made it. */
  readonly connection: RedisConnection;
  readonly logger: Logger;
  /** Key prefix, so several gateways (or tests) can share one Redis. */
  readonly prefix?: string;
  /** How often a replica announces itself, and how fresh an announcement must be to count. */
  readonly heartbeatMs?: number;
  /**
   * How long a reservation counts as in flight when its replica never reports back (it crashed):
   * longer than any request can take, so a live one is never forgotten early.
   */
  readonly inflightMs?: number;
  /**
   * How long a replica back on Redis waits for the requests it planned on its local share before it
   * moves anyway (see #rejoin); default PROBE_MS. A request never answered nor released would
   * otherwise keep it off Redis for good.
   */
  readonly drainMs?: number;
  /** Keys whose last shared view is remembered for a failover (default 10,000). */
  readonly maxKeys?: number;
  /** Told when the budget leaves Redis for the local share (false) and when it is shared again (true). */
  readonly onShared?: (shared: boolean) => void;
  /**
   * A connection of its own (a subscribed one can send nothing else) on which the answers other
   * replicas record are heard (see WAKE); none: waiters on another replica's answer ask again on a timer.
   */
  readonly subscriber?: RedisConnection;
}

/** What this replica last learned of a key from Redis: what the fallback starts from if Redis goes. */
interface KnownKey {
  /** Sends the shared gate still allowed, and until when (the upstream's Reset); -1: no gate. */
  left: number;
  resetAt: number;
  pausedUntil: number;
  /** The upstream's Reset of the last window this replica planned sends into on its local share. */
  localUntil: number;
}

/** How often a degraded replica asks whether Redis serves again (a Cluster stays "ready" through a failover). */
const REJOIN_PROBE_MS = 250;

export class RedisBudgetStore implements BudgetStore {
  readonly #redis: RedisClient & BudgetCommands;
  readonly #logger: Logger;
  readonly #prefix: string;
  readonly #replicaId = randomUUID();
  readonly #heartbeat: NodeJS.Timeout;
  readonly #heartbeatMs: number;
  readonly #inflightMs: number;
  readonly #drainMs: number;
  readonly #maxKeys: number;
  readonly #onShared: ((shared: boolean) => void) | undefined;
  readonly #known = new Map<string, KnownKey>();
  /**
   * Marks this replica's requests in flight on Redis (seq@tag), so a fence takes off its own, those it
   * never heard of included, and never another replica's, which may still be out.
   */
  readonly #tag = randomBytes(6).toString('hex');
  /**
   * Keys whose command failed (Redis may yet run it: see FENCE), or whose reservation came back after
   * the budget moved: fenced on the way back.
   */
  readonly #suspects = new Set<string>();
  /**
   * Reservations this replica made on Redis and has not yet answered or released, by key: keys with
   * requests of this replica counted in flight there, which a fence takes off when it rejoins.
   */
  readonly #mine = new Map<string, Set<number>>();
  #replicas = 1;
  #epoch = 0;
  #fallback: MemoryBudgetStore | undefined;
  #closed = false;
  #rejoinTimer: NodeJS.Timeout | undefined;
  #rejoining = false;
  /** Since when Redis answers again while requests planned on the local share are still out (0: not). */
  #drainingSince = 0;
  /** A key whose command failed: the rejoin probe asks its slot (on a Cluster, the primary that failed). */
  #probeKey: string;
  readonly #channel: string;
  readonly #subscriber: RedisClient | undefined;
  readonly #watchers = new Set<(keyId: string) => void>();

  constructor(options: RedisBudgetOptions) {
    this.#logger = options.logger;
    this.#prefix = options.prefix ?? 'petstore-gateway';
    this.#heartbeatMs = options.heartbeatMs ?? 1_000;
    this.#inflightMs = options.inflightMs ?? 60_000;
    this.#drainMs = options.drainMs ?? PROBE_MS;
    this.#maxKeys = options.maxKeys ?? 10_000;
    this.#onShared = options.onShared;
    this.#probeKey = `${this.#prefix}:replicas`;
    this.#redis = options.connection.client as RedisClient & BudgetCommands;
    // One channel for the deployment (a Cluster carries a PUBLISH to every node, whatever its name);
    // a message is a key's digest, and only sent when a request of that key waits on an answer.
    this.#channel = `${this.#prefix}:budget-answered`;
    this.#subscriber = options.subscriber?.client;
    if (this.#subscriber !== undefined) {
      this.#subscriber.on('message', (channel: string, keyId: string) => {
        if (channel === this.#channel) for (const watcher of this.#watchers) watcher(keyId);
      });
      // Subscribed again by ioredis after every reconnect (and, on a Cluster, on another node).
      this.#subscriber.subscribe(this.#channel).catch(() => {});
    }
    // EVALSHA, and EVAL once per server that lacks the script (a promoted replica, a restarted one).
    this.#redis.defineCommand('petstoreReserve', { lua: RESERVE });
    this.#redis.defineCommand('petstoreObserve', { lua: OBSERVE });
    this.#redis.defineCommand('petstorePause', { lua: PAUSE });
    this.#redis.defineCommand('petstoreRelease', { lua: RELEASE });
    this.#redis.defineCommand('petstoreFence', { lua: FENCE });
    this.#redis.defineCommand('petstoreBeat', { lua: BEAT });
    // One server and a Sentinel-found primary say "ready" when they reconnect; a Cluster stays ready
    // while one primary is lost, so the rejoin probe (#degrade) is what notices its failover end.
    this.#redis.on('ready', () => void this.#rejoin());
    this.#heartbeat = setInterval(() => void this.#beat(), this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  reserve(keyId: string, windows: readonly RateWindow[], now: number, deadline: number): Promise<Reservation> {
    const keys = [
      this.#key(keyId, 'state'),
      this.#key(keyId, 'inflight'),
      ...windows.map((w) => this.#key(keyId, `w${w.windowMs}`)),
    ];
    return this.#run(
      keyId,
      async () => {
        // Read before the script: should Redis be lost meanwhile, the reservation is still Redis's.
        const epoch = this.#epoch;
        const counts = windows.flatMap((w) => [w.count, w.windowMs]);
        const low = ONE_AT_A_TIME_BELOW;
        const args = [now, Math.round(deadline), PROBE_MS, this.#inflightMs, low, this.#tag, ...counts];
        const [ok, at, third, used, freeAt, left, resetAt] = await this.#redis.petstoreReserve(
          keys.length,
          ...keys,
          ...args,
        );
        if (ok === 1 && this.#epoch !== epoch) {
          // Answered after the budget moved (a stalled Redis answers late): void, and given back; should
          // that fail, the next fence takes it off. Else it would hold the key's probes until it expired.
          this.#suspect(keyId);
          const [state, inflight] = keys as [string, string];
          await this.#redis
            .petstoreRelease(2, state, inflight, third as number, this.#channel, keyId, this.#tag)
            .catch(() => undefined);
          return { ok: false, retryAt: now };
        }
        if (ok === 1) {
          if ((left as number) >= 0) this.#learn(keyId, { left: left as number, resetAt: resetAt as number });
          this.#hold(keyId, third as number);
          return {
            ok: true,
            at: at as number,
            seq: third as number,
            used: used as number,
            freeAt: freeAt as number,
            epoch,
          };
        }
        if (third !== 1 && (at as number) > now) this.#learn(keyId, { pausedUntil: at as number });
        return third === 1 ? { ok: false, retryAt: at as number, probing: true } : { ok: false, retryAt: at as number };
      },
      async (fallback) => {
        // Redis is back and the local share's last requests are still out: plan nowhere until they are
        // in; asked again on a timer (nothing else wakes a waiter when the replica moves).
        if (this.#drainingSince > 0) return { ok: false, retryAt: now + REJOIN_PROBE_MS };
        const epoch = this.#epoch;
        const reservation = await fallback.reserve(keyId, windows, now, deadline);
        return reservation.ok ? { ...reservation, epoch } : reservation;
      },
    );
  }

  observe(keyId: string, o: Observation, now: number): Promise<Quota> {
    const keys = [this.#key(keyId, 'state'), this.#key(keyId, 'inflight')];
    return this.#run(
      keyId,
      async () => {
        const args = [o.seq, o.limit, o.remaining, Math.round(o.resetAt), now];
        const [limit, remaining, resetAt] = await this.#redis.petstoreObserve(
          2,
          ...keys,
          ...args,
          this.#channel,
          keyId,
          this.#tag,
        );
        this.#letGo(keyId, o.seq);
        if (limit !== 0) this.#learn(keyId, { left: remaining as number, resetAt: resetAt as number });
        return { limit: limit as number, remaining: remaining as number, resetAt: resetAt as number };
      },
      async (fallback) => {
        const quota = await fallback.observe(keyId, o, now);
        if (quota.limit !== 0) {
          this.#learn(keyId, { left: quota.remaining, resetAt: quota.resetAt, localUntil: quota.resetAt });
        }
        return quota;
      },
    );
  }

  release(keyId: string, seq: number): Promise<void> {
    const state = this.#key(keyId, 'state');
    return this.#run(
      keyId,
      async () => {
        const inflight = this.#key(keyId, 'inflight');
        await this.#redis.petstoreRelease(2, state, inflight, seq, this.#channel, keyId, this.#tag);
        this.#letGo(keyId, seq);
      },
      (fallback) => fallback.release(keyId, seq),
    );
  }

  pause(keyId: string, until: number, seq: number): Promise<void> {
    // Known here whatever Redis does with it: a pause lost in a failover is asserted again on rejoin.
    this.#learn(keyId, { pausedUntil: until });
    const state = this.#key(keyId, 'state');
    return this.#run(
      keyId,
      async () => {
        await this.#redis.petstorePause(1, state, Math.round(until), Date.now(), seq);
      },
      (fallback) => fallback.pause(keyId, until, seq),
    );
  }

  pausedUntil(keyId: string): Promise<number> {
    const state = this.#key(keyId, 'state');
    return this.#run(
      keyId,
      async () => {
        const until = Number((await this.#redis.hget(state, 'pause')) ?? 0);
        if (until > Date.now()) this.#learn(keyId, { pausedUntil: until });
        return until;
      },
      (fallback) => fallback.pausedUntil(keyId),
    );
  }

  /**
   * A secret every replica agrees on (the first to ask makes it), or undefined while Redis is
   * unreachable: the caller then makes one of its own. One key, used alone: on a Cluster it lives
   * in whatever slot its name hashes to, and needs no hash tag.
   */
  async sharedSecret(name: string): Promise<string | undefined> {
    if (this.#redis.status !== 'ready') return undefined;
    const key = `${this.#prefix}:${name}`;
    try {
      await this.#redis.set(key, randomBytes(32).toString('hex'), 'NX');
      return (await this.#redis.get(key)) ?? undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Resolves once Redis answers (or after `timeoutMs`, degraded): a replica that planned alone
   * while its first connection was still being made could spend the whole budget on its own.
   */
  ready(timeoutMs = 3_000): Promise<void> {
    if (this.#redis.status === 'ready') return this.#beat();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#redis.off('ready', onReady);
        resolve();
      };
      const onReady = () => void this.#beat().then(done);
      const timer = setTimeout(done, timeoutMs);
      this.#redis.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    if (this.#rejoinTimer !== undefined) clearInterval(this.#rejoinTimer);
    this.#rejoinTimer = undefined;
  }

  /**
   * Changes when the budget leaves Redis and when it returns. Sends planned on Redis but not yet made
   * when it went (reservations lie up to PETSTORE_MAX_WAIT ahead) are not in the local share's log,
   * and those planned locally are not in Redis's: each is planned again where the budget now is.
   */
  get epoch(): number {
    return this.#epoch;
  }

  /** Calls `listener` with a key's digest when another replica records an answer a request here may wait on. */
  watch(listener: (keyId: string) => void): void {
    this.#watchers.add(listener);
  }

  /** Whether such answers are heard now: subscribed, and the budget on Redis (not the local share). */
  get notifies(): boolean {
    return this.#subscriber?.status === 'ready' && this.#fallback === undefined;
  }

  /** The replicas seen recently: the share each one may use on its own while Redis is away. */
  get replicas(): number {
    return this.#replicas;
  }

  get degraded(): boolean {
    return this.#fallback !== undefined;
  }

  async #run<T>(
    keyId: string,
    shared: () => Promise<T>,
    local: (fallback: MemoryBudgetStore) => Promise<T>,
  ): Promise<T> {
    if (this.#fallback === undefined && this.#redis.status === 'ready') {
      try {
        return await shared();
      } catch (error) {
        this.#probeKey = this.#key(keyId, 'state');
        this.#suspect(keyId);
        this.#degrade(error);
      }
    } else if (this.#fallback === undefined) {
      this.#degrade(new Error(`connection ${this.#redis.status}`));
    }
    return local(this.#fallback as MemoryBudgetStore);
  }

  /**
   * Plans on a local share from here on. Writes a primary acknowledged but never replicated are lost
   * in a failover, so the fallback starts from what this replica last learned of each key: its pause,
   * and the upstream's Reset of the window in progress, before which it plans nothing new for the key
   * (MemoryBudgetStore.seed says why); then 1/N of each window. Sends planned on Redis and not yet made
   * are planned again (epoch).
   */
  #degrade(error: unknown): void {
    if (this.#fallback !== undefined) return;
    const fallback = new MemoryBudgetStore({ share: 1 / this.#replicas, maxKeys: this.#maxKeys });
    const now = Date.now();
    for (const [keyId, known] of this.#known) {
      if (known.resetAt > now || known.pausedUntil > now) fallback.seed(keyId, known, now);
    }
    this.#fallback = fallback;
    this.#epoch++;
    // Closed: a request still finishing met its closed connection; nothing to tell, nothing to rejoin.
    if (this.#closed) return;
    this.#onShared?.(false);
    this.#logger.warn(
      { reason: (error as Error).message, share: `1/${this.#replicas}` },
      'Redis unreachable: planning on a local rate-limit budget until it returns',
    );
    this.#rejoinTimer ??= setInterval(() => void this.#rejoin(), REJOIN_PROBE_MS);
    this.#rejoinTimer.unref();
  }

  /**
   * Back on Redis once it answers for the key that failed. What Redis holds may be older than what
   * happened (a failover loses the writes not yet replicated; sends made on the local share were
   * never written), so each key this replica knows of is fenced first: its pause asserted again (or
   * one until its Reset when the window was spent), its gate dropped, so the next send is one probe
   * whose answer (the upstream's Remaining) sets the gate again.
   *
   * A window the local share planned sends into is not planned on Redis at all: the sends of it still
   * out, here or at a replica not yet back, reach the upstream after the probe and are not in its
   * Remaining (so a probe's gate would overspend the window), and Redis's log holds none of them. So
   * first the local share's requests still out are awaited (up to drainMs, planning nothing
   * meanwhile), then such a key is paused on Redis until that window's Reset: the rule of the way
   * out (MemoryBudgetStore.seed), on the way back.
   */
  async #rejoin(): Promise<void> {
    const fallback = this.#fallback;
    if (fallback === undefined || this.#rejoining) return;
    // Lost again while waiting for the local share's requests: the local share plans again.
    if (this.#redis.status !== 'ready') {
      this.#drainingSince = 0;
      return;
    }
    this.#rejoining = true;
    try {
      await this.#redis.pttl(this.#probeKey);
      if (this.#drainingSince === 0) this.#drainingSince = Date.now();
      if (fallback.inflight > 0 && Date.now() - this.#drainingSince < this.#drainMs) return;
      const now = Date.now();
      // Keys with requests of this replica counted in flight on Redis (some perhaps never heard of),
      // and those whose window in progress or pause it knows of; a key whose Reset and pause have
      // passed, with nothing of this replica's in flight, has nothing left to lose.
      const keys = new Set([...this.#suspects, ...this.#mine.keys()]);
      for (const [keyId, known] of this.#known) if (known.resetAt > now || known.pausedUntil > now) keys.add(keyId);
      const fences: Promise<unknown>[] = [];
      for (const keyId of keys) {
        const known = this.#known.get(keyId);
        const local = await fallback.pausedUntil(keyId);
        const spent = known !== undefined && known.left === 0 && known.resetAt > now ? known.resetAt : 0;
        const until = Math.round(Math.max(known?.pausedUntil ?? 0, local, spent, known?.localUntil ?? 0));
        const [state, inflight] = [this.#key(keyId, 'state'), this.#key(keyId, 'inflight')];
        fences.push(this.#redis.petstoreFence(2, state, inflight, until, now, this.#tag));
      }
      await Promise.all(fences);
      this.#mine.clear();
      this.#suspects.clear();
      if (this.#rejoinTimer !== undefined) clearInterval(this.#rejoinTimer);
      this.#rejoinTimer = undefined;
      this.#fallback = undefined;
      this.#drainingSince = 0;
      this.#epoch++;
      this.#onShared?.(true);
      this.#logger.info('Redis is back: rate-limit budget shared across replicas again');
    } catch (error) {
      // Not yet: the local share plans again, and the next probe tries again.
      this.#drainingSince = 0;
      this.#logger.debug({ reason: (error as Error).message }, 'Redis not back yet');
    } finally {
      this.#rejoining = false;
    }
  }

  /** A key Redis may hold a reservation of this replica's for, unknown or void: fenced on the way back. */
  #suspect(keyId: string): void {
    if (this.#suspects.size < this.#maxKeys) this.#suspects.add(keyId);
  }

  #hold(keyId: string, seq: number): void {
    const held = this.#mine.get(keyId);
    if (held !== undefined) held.add(seq);
    else if (this.#mine.size < this.#maxKeys) this.#mine.set(keyId, new Set([seq]));
  }

  #letGo(keyId: string, seq: number): void {
    const held = this.#mine.get(keyId);
    if (held?.delete(seq) && held.size === 0) this.#mine.delete(keyId);
  }

  /** Remembers the latest shared view of a key, most recent last; the oldest forgotten past maxKeys. */
  #learn(keyId: string, update: Partial<KnownKey>): void {
    const known = this.#known.get(keyId) ?? { left: -1, resetAt: 0, pausedUntil: 0, localUntil: 0 };
    this.#known.delete(keyId);
    if (update.left !== undefined) known.left = update.left;
    if (update.resetAt !== undefined) known.resetAt = update.resetAt;
    if (update.pausedUntil !== undefined) known.pausedUntil = Math.max(known.pausedUntil, update.pausedUntil);
    if (update.localUntil !== undefined) known.localUntil = Math.max(known.localUntil, update.localUntil);
    this.#known.set(keyId, known);
    if (this.#known.size > this.#maxKeys) this.#known.delete(this.#known.keys().next().value as string);
  }

  /**
   * The replicas alive, for the 1/N share. One key, used alone (its script touches one slot): on a
   * Cluster it lives wherever its name hashes, needs no hash tag, and losing it for a failover only
   * leaves N at what was last counted.
   */
  async #beat(): Promise<void> {
    if (this.#redis.status !== 'ready') return;
    const key = `${this.#prefix}:replicas`;
    const now = Date.now();
    try {
      const count = await this.#redis.petstoreBeat(
        1,
        key,
        now,
        this.#replicaId,
        5 * this.#heartbeatMs,
        10 * this.#heartbeatMs,
      );
      this.#replicas = Math.max(1, count);
    } catch {
      // The next reservation notices and falls back; the heartbeat only sizes the share.
    }
  }

  #key(keyId: string, part: string): string {
    // One hash tag per API key keeps its keys in one Redis Cluster slot, as a script needs.
    return `${this.#prefix}:{${keyId}}:${part}`;
  }
}
