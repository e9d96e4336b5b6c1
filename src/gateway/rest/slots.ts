/**
 * Slots per API key: how many of a key's requests may be planned or in flight at once. One key may
 * hold at most its share of the upstream connection pool, so slow answers for one key never hold
 * another's requests. Within a key, waiting requests are granted round-robin across clients (a
 * client that queued a thousand requests waits its turn like one that queued one), each client's
 * queue is bounded, and a wait ends at the operation's deadline or when its client leaves.
 */

import { rateLimited } from '../errors.js';

export interface SlotsOptions {
  /** Slots per key. */
  readonly perKey: number;
  /** Requests one client may have waiting for one key. */
  readonly maxQueuedPerClient: number;
  readonly now?: () => number;
}

export interface Slots {
  /**
   * Resolves with a release function once the key has a free slot for this client; rejects with
   * RATE_LIMITED at `until` or when the client's queue is full, and with the signal's reason on abort.
   */
  acquire(keyId: string, clientId: string, until: number, signal?: AbortSignal): Promise<() => void>;
  /** Keys with slots taken or requests waiting (an idle key is forgotten at once). */
  readonly keys: number;
  /** Requests waiting, over all keys. */
  readonly waiting: number;
}

interface Waiter {
  readonly grant: (release: () => void) => void;
}

function queueFull() {
  return rateLimited(1, 'too many requests are waiting for this API key; retry shortly');
}

interface KeySlots {
  taken: number;
  /** Waiting requests per client, in arrival order. */
  readonly queues: Map<string, Waiter[]>;
  /** Clients with requests waiting, next to be served first. */
  readonly turn: string[];
}

export function createSlots(options: SlotsOptions): Slots {
  const now = options.now ?? Date.now;
  const keys = new Map<string, KeySlots>();
  let waiting = 0;

  function releaser(keyId: string, state: KeySlots): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const client = state.turn.shift();
      if (client === undefined) {
        state.taken--;
        if (state.taken === 0) keys.delete(keyId);
        return;
      }
      const queue = state.queues.get(client) as Waiter[];
      const next = queue.shift() as Waiter;
      waiting--;
      if (queue.length > 0) state.turn.push(client);
      else state.queues.delete(client);
      // The slot passes straight to the next request: `taken` is unchanged.
      next.grant(releaser(keyId, state));
    };
  }

  return {
    acquire(keyId, clientId, until, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      let state = keys.get(keyId);
      if (state === undefined) {
        state = { taken: 0, queues: new Map(), turn: [] };
        keys.set(keyId, state);
      }
      if (state.taken < options.perKey && state.turn.length === 0) {
        state.taken++;
        return Promise.resolve(releaser(keyId, state));
      }
      const wait = until - now();
      const queue = state.queues.get(clientId) ?? [];
      if (queue.length >= options.maxQueuedPerClient || wait <= 0) {
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
          }
          reject(error);
        };
        const onAbort = () => leave(signal?.reason);
        const timer = setTimeout(() => leave(queueFull()), wait);
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
          current.turn.push(clientId);
        }
        queue.push(waiter);
        waiting++;
      });
    },
    get keys() {
      return keys.size;
    },
    get waiting() {
      return waiting;
    },
  };
}
