/**
 * Slots for upstream requests: how many may be planned or in flight at once, in all (the connection
 * pool) and per API key (a share of it), so slow answers for one key never hold another key's
 * requests. When slots are short, waiting requests are served round-robin across keys, and within a
 * key round-robin across clients: a client that queued a thousand requests waits its turn like one
 * that queued one. Each client's queue is bounded, and a wait ends at its operation's deadline or
 * when its client leaves.
 */

import type { CancelSignal } from '../../shared/cancel.js';
import { rateLimited } from '../errors.js';

export interface SlotsOptions {
  /** Slots in all (the size of the upstream connection pool). */
  readonly total: number;
  /** Slots one key may hold. */
  readonly perKey: number;
  /** Requests one client may have waiting for one key. */
  readonly maxQueuedPerClient: number;
  readonly now?: () => number;
}

export interface Slots {
  /**
   * Resolves with a release function once a slot is free for this key and client; rejects with
   * RATE_LIMITED at `until` or when the client's queue is full (and calls `onRefused` then), and
   * with the signal's reason on abort.
   */
  acquire(
    keyId: string,
    clientId: string,
    until: number,
    signal?: CancelSignal,
    onRefused?: () => void,
  ): Promise<() => void>;
  /** Keys with slots taken or requests waiting (idle keys are not counted). */
  readonly keys: number;
  /** Requests waiting, over all keys. */
  readonly waiting: number;
  /** Slots taken, over all keys. */
  readonly taken: number;
}

interface Waiter {
  readonly grant: (release: () => void) => void;
}

interface KeySlots {
  taken: number;
  /** Waiting requests per client, in arrival order. */
  readonly queues: Map<string, Waiter[]>;
  /** Clients with requests waiting, next to be served first. */
  readonly turn: string[];
  /** No slot taken and nothing waiting: kept for the key's next request, swept past MAX_IDLE_KEYS. */
  idle: boolean;
}

/**
 * Idle keys whose state is kept. A key of the planning turns (one slot per key) is idle after every
 * request; forgetting it at once made one long-lived `Map` see a `set` and a `delete` per request,
 * and such a `Map` moves to a new table in the old generation every few requests, whose garbage
 * keeps young entries alive through scavenges (the README's "Why a `Set` cost a fifth of the
 * throughput"). Kept, the key's state is reused; the idle are swept all at once past this bound.
 */
const MAX_IDLE_KEYS = 1_000;

function queueFull() {
  return rateLimited(1, 'too many requests are waiting for this API key; retry shortly');
}

export function createSlots(options: SlotsOptions): Slots {
  const now = options.now ?? Date.now;
  const keys = new Map<string, KeySlots>();
  /** Keys with requests waiting, next to be served first. */
  const turn: string[] = [];
  let taken = 0;
  let waiting = 0;
  let idle = 0;

  function releaser(state: KeySlots): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      state.taken--;
      taken--;
      forgetIfIdle(state);
      grantWaiting();
    };
  }

  function forgetIfIdle(state: KeySlots): void {
    if (state.idle || state.taken !== 0 || state.turn.length !== 0) return;
    state.idle = true;
    if (++idle <= MAX_IDLE_KEYS) return;
    for (const [keyId, each] of keys) if (each.idle) keys.delete(keyId);
    idle = 0;
  }

  /** The key's state, made or woken for a request. */
  function stateOf(keyId: string): KeySlots {
    let state = keys.get(keyId);
    if (state === undefined) {
      state = { taken: 0, queues: new Map(), turn: [], idle: false };
      keys.set(keyId, state);
    } else if (state.idle) {
      state.idle = false;
      idle--;
    }
    return state;
  }

  /** Gives free slots to waiting requests: the next key in turn that may take one, its next client. */
  function grantWaiting(): void {
    for (let tried = 0; taken < options.total && tried < turn.length; ) {
      const keyId = turn.shift() as string;
      const state = keys.get(keyId) as KeySlots;
      if (state.taken >= options.perKey) {
        turn.push(keyId);
        tried++;
        continue;
      }
      const client = state.turn.shift() as string;
      const queue = state.queues.get(client) as Waiter[];
      const next = queue.shift() as Waiter;
      waiting--;
      if (queue.length > 0) state.turn.push(client);
      else state.queues.delete(client);
      if (state.turn.length > 0) turn.push(keyId);
      state.taken++;
      taken++;
      tried = 0;
      next.grant(releaser(state));
    }
  }

  return {
    acquire(keyId, clientId, until, signal, onRefused) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const state = stateOf(keyId);
      if (taken < options.total && state.taken < options.perKey && state.turn.length === 0) {
        state.taken++;
        taken++;
        return Promise.resolve(releaser(state));
      }
      const wait = until - now();
      const queue = state.queues.get(clientId) ?? [];
      if (queue.length >= options.maxQueuedPerClient || wait <= 0) {
        forgetIfIdle(state);
        onRefused?.();
        return Promise.reject(queueFull());
      }
      const current = state;
      return new Promise((resolve, reject) => {
        const leave = (error: unknown) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          const index = queue.indexOf(waiter);
          if (index < 0) return;
          queue.splice(index, 1);
          waiting--;
          if (queue.length === 0) {
            current.queues.delete(clientId);
            current.turn.splice(current.turn.indexOf(clientId), 1);
            if (current.turn.length === 0) turn.splice(turn.indexOf(keyId), 1);
          }
          forgetIfIdle(current);
          reject(error);
        };
        const onAbort = () => leave(signal?.reason);
        const timer = setTimeout(() => {
          onRefused?.();
          leave(queueFull());
        }, wait);
        const waiter: Waiter = {
          grant: (release) => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            resolve(release);
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        if (queue.length === 0) {
          current.queues.set(clientId, queue);
          if (current.turn.length === 0) turn.push(keyId);
          current.turn.push(clientId);
        }
        queue.push(waiter);
        waiting++;
      });
    },
    get keys() {
      return keys.size - idle;
    },
    get waiting() {
      return waiting;
    },
    get taken() {
      return taken;
    },
  };
}
