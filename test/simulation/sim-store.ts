/**
 * The shared store as the simulation's replicas meet it: the budget model (src/gateway/upstream/
 * limits/model.ts) on state the replicas share, behind a network with faults. It stands for Redis
 * running the budget's Lua, which test/integration/gateway/budget-lua.test.ts holds to the same
 * model on random sequences against a real redis-server; the faults are what ioredis surfaces of a
 * real one (redis/connection.ts: no offline queue, a 1 s command timeout, reconnects announced by
 * 'ready'):
 *
 * - a **stall** (a slow script, a fork, DEBUG SLEEP): commands wait until it ends, then run; one that
 *   waited past the timeout has failed for its replica, yet runs all the same;
 * - a **partition** of one replica: its connection drops (commands fail at once; those sent before
 *   run, their replies are lost) until it heals and says 'ready';
 * - **lost replies** of one replica: its commands run and their replies never come (time-outs);
 * - a **failover**: every connection drops for its length, and the new primary lacks the writes of
 *   the last FAILOVER_LAG_MS (asynchronous replication);
 * - a **Cluster failover**: the primary holding the budget's keys dies, the same loss of writes,
 *   but the leases live on another primary and the connections stay up: beats go on, the budget's
 *   commands fail (ioredis's redirections to a closed node, CLUSTER_FAIL_MS), and each replica
 *   finds the new primary on its own, up to SLOT_REFRESH_MS after it is promoted (its slot map);
 * - a **flush**: everything is gone at once.
 *
 * Faked because Redis's faults cannot be made on a virtual clock; a real redis-server, Cluster and
 * Sentinel are in the integration and system tests.
 */

import { EventEmitter } from 'node:events';
import type { Recorded } from '../../src/gateway/upstream/limits/budget.js';
import * as model from '../../src/gateway/upstream/limits/model.js';
import type { Member, Planned } from '../../src/gateway/upstream/limits/redis-budget.js';
import type { BudgetBackend } from '../../src/gateway/upstream/limits/shared-budget.js';
import type { StoreFault } from './scenario.js';

/**
 * A command's round trip: 1 or 2 ms, drawn per command; a published message takes 0-2 ms on its own
 * connection. Drawn apart, as on real connections: a replica may hear of an answer before the
 * reply to a reservation that Redis ran before that answer.
 */
const RTT_MS = 1;
const MESSAGE_MS = 2;
/** As redis/connection.ts sets ioredis's commandTimeout. */
const COMMAND_TIMEOUT_MS = 1_000;
/** The writes a failover loses: those of its last moments, not yet replicated. */
export const FAILOVER_LAG_MS = 200;
/** How long a command to a Cluster's dead primary takes to fail: a few redirections 100 ms apart. */
const CLUSTER_FAIL_MS = 500;
/** How late a replica may find a Cluster's new primary: slot maps refresh every 2 s (redis/connection.ts). */
const SLOT_REFRESH_MS = 2_000;

interface Key {
  readonly budget: model.KeyBudget;
  /** Which replica planned each request in flight (the Lua's f<seq>@<tag>), and when (its send's score in the log). */
  readonly tags: Map<number, { readonly tag: string; readonly at: number }>;
  /** A replica waits until an answer arrives: the next answer tells them (the Lua's `wait`). */
  waiting: boolean;
  /**
   * Turns across replicas (the Lua's `cl` and `nx`; model.ts CLAIM_MS): the replica refused first
   * has the unit that frees to itself for CLAIM_MS from when it was told to ask again (`from`: the end
   * of its wait, or the answer that tells it); one held back meanwhile is next.
   */
  claim?: Claim | undefined;
  next?: Claim | undefined;
}

interface Claim {
  readonly tag: string;
  from: number;
  /** It waits on an answer: the answer that tells it sets `from`. */
  readonly answer: boolean;
}

interface State {
  readonly keys: Map<string, Key>;
  /** Each replica's last beat. */
  readonly beats: Map<string, number>;
}

const empty = (): State => ({ keys: new Map(), beats: new Map() });

/** One replica's connection: what the budget reads of ioredis's. */
class SimConnection extends EventEmitter {
  status = 'ready';
  /** Changes when the connection drops: replies of commands sent before are lost. */
  drops = 0;
  constructor(
    private readonly store: SimStore,
    private readonly index: number,
  ) {
    super();
  }
  pttl(key: string): Promise<number> {
    return this.store.exec(this.index, () => 1, key.endsWith(':replicas'));
  }
  drop(): void {
    this.status = 'reconnecting';
    this.drops++;
  }
  heal(): void {
    this.status = 'ready';
    this.emit('ready');
  }
}

/** A subscribed connection: answers of a key someone waits on, published to every replica still connected. */
class SimSubscriber extends EventEmitter {
  subscribe(): Promise<number> {
    return Promise.resolve(1);
  }
}

export class SimStore {
  #state = empty();
  readonly #startAt: number;
  /** Every write since the last flush, for the state a failover's new primary holds. */
  #journal: { at: number; apply: (state: State) => void }[] = [];
  readonly #connections: SimConnection[] = [];
  readonly #subscribers: SimSubscriber[] = [];
  readonly #faults: readonly StoreFault[];
  /** Each Cluster failover, and when each replica finds its new primary. */
  readonly #found = new Map<StoreFault, number[]>();

  readonly #random: () => number;

  constructor(replicas: number, faults: readonly StoreFault[], startAt: number, random: () => number) {
    this.#faults = faults;
    this.#random = random;
    this.#startAt = startAt;
    for (let i = 0; i < replicas; i++) {
      this.#connections.push(new SimConnection(this, i));
      this.#subscribers.push(new SimSubscriber());
    }
    for (const fault of faults) {
      if (fault.kind === 'node-failover') {
        const found = this.#connections.map(() => fault.at + fault.forMs + Math.floor(random() * SLOT_REFRESH_MS));
        this.#found.set(fault, found);
      }
      const at = startAt + fault.at;
      setTimeout(() => this.#begin(fault), Math.max(0, at - Date.now()));
      if (fault.kind !== 'flush') setTimeout(() => this.#end(fault), Math.max(0, at + fault.forMs - Date.now()));
    }
  }

  /** What replica `index` uses: its connection, its subscriber, and the budget's commands over them. */
  replica(index: number) {
    return {
      client: this.#connections[index] as SimConnection,
      subscriber: this.#subscribers[index] as SimSubscriber,
      backend: (tag: string, channel: string) => this.#backend(index, tag, channel),
    };
  }

  #begin(fault: StoreFault): void {
    if (fault.kind === 'partition') this.#connections[fault.replica]?.drop();
    if (fault.kind === 'failover' || fault.kind === 'node-failover') {
      if (fault.kind === 'failover') for (const connection of this.#connections) connection.drop();
      // The new primary: what was written up to the lag before, replayed (on a Cluster, the leases
      // are elsewhere and keep every beat).
      const kept = this.#journal.filter((write) => write.at <= Date.now() - FAILOVER_LAG_MS);
      const { beats } = this.#state;
      this.#state = empty();
      for (const write of kept) write.apply(this.#state);
      if (fault.kind === 'node-failover') this.#state = { keys: this.#state.keys, beats };
      this.#journal = kept;
    }
    if (fault.kind === 'flush') {
      this.#state = empty();
      this.#journal = [];
    }
  }

  #end(fault: StoreFault): void {
    if (fault.kind === 'partition') this.#connections[fault.replica]?.heal();
    if (fault.kind === 'failover') for (const connection of this.#connections) connection.heal();
  }

  #active(kind: StoreFault['kind'], at: number, replica?: number): StoreFault | undefined {
    return this.#faults.find(
      (f) => f.kind === kind && (replica === undefined || f.replica === replica) && at >= f.at && at < f.at + f.forMs,
    );
  }

  /** Whether replica `index` still sends the budget's commands to a Cluster's dead primary at `at`. */
  #unreached(index: number, at: number): boolean {
    for (const [fault, found] of this.#found) if (at >= fault.at && at < (found[index] as number)) return true;
    return false;
  }

  /**
   * Runs `command` for replica `index` as Redis would over its connection, faults and all; `leases`:
   * it touches only the replicas' leases (on a Cluster, another primary than the budget's).
   */
  exec<T>(index: number, command: (state: State) => T, leases = false): Promise<T> {
    const startAt = this.#startAt;
    const connection = this.#connections[index] as SimConnection;
    if (connection.status !== 'ready') return Promise.reject(new Error('Connection is closed.'));
    const issued = Date.now();
    if (!leases && this.#unreached(index, issued - startAt)) {
      return new Promise((_, reject) =>
        setTimeout(() => reject(new Error('Too many Cluster redirections.')), CLUSTER_FAIL_MS),
      );
    }
    const drops = connection.drops;
    const stall = this.#active('stall', issued - startAt);
    const runAt = stall === undefined ? issued : startAt + stall.at + stall.forMs;
    const replyLost = this.#active('lost-reply', issued - startAt, index) !== undefined;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timeout = setTimeout(() => {
        settled = true;
        reject(new Error('Command timed out'));
      }, COMMAND_TIMEOUT_MS);
      setTimeout(() => {
        const result = this.#write(command);
        if (replyLost) return;
        setTimeout(
          () => {
            if (settled) return;
            settled = true;
            clearTimeout(timeout);
            if (connection.drops !== drops) reject(new Error('Connection is closed.'));
            else resolve(result);
          },
          RTT_MS + Math.floor(this.#random() * 2),
        );
      }, runAt - issued);
    });
  }

  #write<T>(command: (state: State) => T): T {
    let result: T | undefined;
    const apply = (state: State) => {
      result = command(state);
    };
    apply(this.#state);
    this.#journal.push({ at: Date.now(), apply });
    return result as T;
  }

  #key(state: State, keyId: string): Key {
    let key = state.keys.get(keyId);
    if (key === undefined) {
      key = { budget: model.newBudget(), tags: new Map(), waiting: false };
      state.keys.set(keyId, key);
    }
    return key;
  }

  /** Tells the other replicas still connected that a key someone waits on was answered. */
  #tell(key: Key, keyId: string, channel: string, now: number): void {
    if (!key.waiting) return;
    key.waiting = false;
    for (const claim of [key.claim, key.next]) if (claim?.answer && claim.from > now) claim.from = now;
    for (const [i, subscriber] of this.#subscribers.entries()) {
      setTimeout(
        () => {
          if (this.#connections[i]?.status === 'ready') subscriber.emit('message', channel, keyId);
        },
        Math.floor(this.#random() * (MESSAGE_MS + 1)),
      );
    }
  }

  #backend(index: number, tag: string, channel: string): BudgetBackend {
    return {
      reserve: (keyId, plan, now) =>
        this.exec(index, (state): Planned => {
          const key = this.#key(state, keyId);
          const shared = plan.windows.length > 0;
          if (key.claim !== undefined && now >= key.claim.from + model.CLAIM_MS) {
            key.claim = key.next;
            key.next = undefined;
          }
          const { claim } = key;
          const others = shared && claim !== undefined && claim.tag !== tag;
          // The unit another replica waited for first is left to it while it comes for it (one
          // beside it is not); this one is next, and waits as if that unit were gone.
          if (others && claim.from <= now && model.room(key.budget, plan, now).free <= 1) {
            const after = model.reserve(structuredClone(key.budget), plan, now).room;
            const ends = claim.from + model.CLAIM_MS;
            // No later than the turn's end: a turn not taken frees the unit for whoever asks.
            const byTurn = after.until >= ends;
            const until = byTurn ? ends : after.until;
            const wait = byTurn ? 'window' : after.wait;
            if (key.next === undefined || key.next.tag === tag) {
              key.next = { tag, from: until, answer: wait === 'answer' };
            }
            if (wait === 'answer') key.waiting = true;
            return {
              ok: false,
              seq: 0,
              room: { free: 0, until, wait },
              used: 0,
            };
          }
          const planned = model.reserve(key.budget, plan, now);
          if (!('seq' in planned)) {
            const { wait, until } = planned.room;
            if (wait === 'answer') key.waiting = true;
            const mine = { tag, from: until, answer: wait === 'answer' };
            if (shared && !others) key.claim = mine;
            else if (shared && (key.next === undefined || key.next.tag === tag)) key.next = mine;
            return { ok: false, seq: 0, room: planned.room, used: 0 };
          }
          // Served: the turn passes to the replica next, if another.
          if (claim?.tag === tag) {
            key.claim = key.next?.tag === tag ? undefined : key.next;
            key.next = undefined;
          }
          if (plan.windows.length > 0) key.tags.set(planned.seq, { tag, at: now });
          if (planned.room.wait === 'answer') key.waiting = true;
          return { ok: true, seq: planned.seq, room: planned.room, used: planned.used };
        }),
      answer: (keyId, seq, said, now, plan, wantRoom) =>
        this.exec(index, (state): Recorded => {
          const key = this.#key(state, keyId);
          // The Lua ends a request in flight only for the replica that planned it (f<seq>@<tag>): for
          // another's, it stays counted, and was not this answer's to end (a stand-in keeps the count
          // while the model finds nothing to take off, as the Lua's HDEL does).
          const others = key.budget.inflight.has(seq) && key.tags.get(seq)?.tag !== tag;
          if (others) {
            key.budget.inflight.delete(seq);
            key.budget.inflight.add(-seq);
          }
          const pauseMs = model.answer(key.budget, plan, seq, said, now);
          if (others) {
            key.budget.inflight.delete(-seq);
            key.budget.inflight.add(seq);
          } else key.tags.delete(seq);
          this.#tell(key, keyId, channel, now);
          const room = model.room(key.budget, plan, now);
          if (wantRoom && room.wait === 'answer') key.waiting = true;
          return { pauseMs, room, view: model.view(key.budget, plan, now) };
        }),
      release: (keyId, seq, now, plan, wantRoom, unsent) =>
        this.exec(index, (state) => {
          const key = this.#key(state, keyId);
          const planned = key.tags.get(seq);
          if (planned?.tag === tag) model.release(key.budget, seq, unsent ? planned.at : undefined);
          key.tags.delete(seq);
          this.#tell(key, keyId, channel, now);
          const room = model.room(key.budget, plan, now);
          if (wantRoom && room.wait === 'answer') key.waiting = true;
          return room;
        }),
      reconcile: (keyId, pausedUntil, sent) =>
        this.exec(index, (state) => {
          const { budget, tags } = this.#key(state, keyId);
          budget.pausedUntil = Math.max(budget.pausedUntil, pausedUntil);
          budget.log.push(...sent);
          budget.log.sort((a, b) => a - b);
          for (const [seq, owner] of tags) {
            if (owner.tag !== tag) continue;
            budget.inflight.delete(seq);
            tags.delete(seq);
          }
          budget.gate = undefined;
        }),
      forget: (keyId) =>
        this.exec(index, (state) => {
          state.keys.delete(keyId);
        }),
      beat: (id, now, leaseMs, awayMs, since) =>
        this.exec(
          index,
          (state): Member => {
            state.beats.set(id, now);
            let alive = 0;
            let away = 0;
            for (const [other, at] of state.beats) {
              if (at <= now - awayMs) state.beats.delete(other);
              else if (at >= Math.max(now - leaseMs, since)) alive++;
              else away++;
            }
            return { alive, away };
          },
          true,
        ),
    };
  }
}
