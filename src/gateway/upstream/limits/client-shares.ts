/**
 * Each client's fair share of a key's window, for the clients of one shared server key (who a
 * client is: CLIENT_ID_HEADER, else its remote address). A key's window frees its sends in bursts
 * (the upstream's own fixed windows, and the sliding log that mirrors them), and a client that keeps
 * many requests waiting takes a whole burst the moment it frees: a light client then finds the
 * window spent all the time (one query every 300 ms got 10 answers and 39 RATE_LIMITED next to a
 * client with 12 in flight, which got 170). So each client active in the last window may send at
 * most its share of the window's count while the others are active (count divided by the active
 * clients); a client alone may use all of it. A client counts as active from its first request, sent
 * or not, so one whose every request was refused is still reserved its share.
 *
 * Per process: with replicas, each divides its own view. A client that names itself anew with every
 * request is many clients: CLIENT_ID_HEADER is as fair as the proxy that sets it (README).
 */

import type { RateWindow } from '../../../config.js';

export interface ClientShares {
  /** When `clientId` may next send for the key within its share (≤ now: at once); marks it active. */
  nextFor(keyId: string, clientId: string, now: number): number;
  /** A send of the client's was planned at `at`. */
  sent(keyId: string, clientId: string, at: number): void;
}

export interface ClientSharesOptions {
  /** The window shared out: the plan's smallest. */
  readonly window: RateWindow;
  /** Keys remembered at most (the least recently used go first). */
  readonly maxKeys: number;
  /** Clients remembered per key at most (the least recently seen go first). */
  readonly maxClientsPerKey?: number;
}

interface Client {
  lastSeen: number;
  /** Planned send times within the window, ascending. */
  readonly sends: number[];
}

interface KeyClients {
  readonly clients: Map<string, Client>;
  /** Clients active at the last count, and when that was. */
  active: number;
  sweptAt: number;
}

export function createClientShares(options: ClientSharesOptions): ClientShares {
  const { count, windowMs } = options.window;
  const maxClients = options.maxClientsPerKey ?? 1_000;
  const keys = new Map<string, KeyClients>();
  /** How often the active clients of a key are counted again: a count is a walk over all of them. */
  const sweepEveryMs = Math.max(1, windowMs / 20);

  function clientsOf(keyId: string): KeyClients {
    let key = keys.get(keyId);
    if (key === undefined) {
      key = { clients: new Map(), active: 0, sweptAt: Number.NEGATIVE_INFINITY };
      if (keys.size >= options.maxKeys) keys.delete(keys.keys().next().value as string);
    } else keys.delete(keyId);
    keys.set(keyId, key);
    return key;
  }

  /** Forgets clients quiet for a whole window with no send in it; counts the others. */
  function sweep(key: KeyClients, now: number): number {
    if (now - key.sweptAt < sweepEveryMs) return key.active;
    let active = 0;
    for (const [id, client] of key.clients) {
      if (client.lastSeen <= now - windowMs && (client.sends.at(-1) ?? Number.NEGATIVE_INFINITY) <= now - windowMs) {
        key.clients.delete(id);
      } else active++;
    }
    key.sweptAt = now;
    key.active = active;
    return active;
  }

  /** The client's sends still in the window. */
  function inWindow(client: Client, now: number): number {
    let expired = 0;
    while (expired < client.sends.length && (client.sends[expired] as number) <= now - windowMs) expired++;
    if (expired > 0) client.sends.splice(0, expired);
    return client.sends.length;
  }

  return {
    nextFor(keyId, clientId, now) {
      const key = clientsOf(keyId);
      const { clients } = key;
      let client = clients.get(clientId);
      if (client === undefined) {
        if (clients.size >= maxClients) clients.delete(clients.keys().next().value as string);
        client = { lastSeen: now, sends: [] };
        clients.set(clientId, client);
        key.sweptAt = Number.NEGATIVE_INFINITY;
      } else {
        client.lastSeen = now;
        // Most recently seen last, so the least recently seen goes first past the bound.
        clients.delete(clientId);
        clients.set(clientId, client);
      }
      // A key's only client (a client's own key always is) is never held back here.
      if (clients.size === 1) return now;
      const active = sweep(key, now);
      const share = Math.max(1, Math.floor(count / Math.max(1, active)));
      if (inWindow(client, now) < share) return now;
      return (client.sends[client.sends.length - share] as number) + windowMs;
    },
    sent(keyId, clientId, at) {
      const client = keys.get(keyId)?.clients.get(clientId);
      if (client === undefined) return;
      client.sends.push(at);
      // Only the last `count` can matter: a share is never more than the window's count.
      if (client.sends.length > count) client.sends.shift();
    },
  };
}
