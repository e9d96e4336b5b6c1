/**
 * The one way the gateway connects to Redis, in each of its modes: one server (REDIS_URL), a Redis
 * Cluster (REDIS_CLUSTER_NODES) or a primary found through Sentinel (REDIS_SENTINELS), each with the
 * same credentials and TLS settings. Imported only with a Redis configured (upstream.ts loads it
 * with `import()`), so a gateway without one never loads ioredis.
 *
 * Every connection fails fast while Redis cannot answer (no offline queue, no retry of a command):
 * the budget then plans on its local share at once instead of holding requests, and the answer store
 * serves from the process. Connections come back by themselves: ioredis reconnects one server and a
 * Sentinel-found primary (asking the sentinels again, so a failover is followed), and a Cluster
 * refreshes its slot map when a node is lost or answers MOVED.
 */

import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '../../config.js';

export type RedisClient = Redis | Cluster;
export interface RedisConnection {
  readonly client: RedisClient;
  /** Every primary (one outside a Cluster): what a SCAN over all keys must visit. */
  primaries(): Redis[];
  close(): void;
}

export interface RedisConnectionOptions {
  /** A command not answered within this fails (the caller falls back), so nothing waits on a dead primary. */
  readonly commandTimeoutMs?: number;
  /**
   * Queue commands while disconnected: for a subscriber, whose SUBSCRIBE ioredis sends again after
   * every reconnect and which sends nothing else. Every other connection fails fast instead.
   */
  readonly offlineQueue?: boolean;
  /** Told once each time the primary serving (a Cluster: the set of primaries) changes: a failover. */
  readonly onFailover?: (from: string, to: string) => void;
}

/** A Cluster's per-node options: it sets the retry and the offline queue of each node itself. */
function perNode(options: RedisOptions): ClusterOptions['redisOptions'] {
  const { retryStrategy: _retry, enableOfflineQueue: _queue, ...rest } = options;
  return rest;
}

/** Reconnects half a second apart at most: a failover is followed within that of its end. */
const retry = (attempt: number) => Math.min(100 * attempt, 500);

export function createRedisConnection(target: RedisTarget, options: RedisConnectionOptions = {}): RedisConnection {
  const common: RedisOptions = {
    enableOfflineQueue: options.offlineQueue ?? false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: options.commandTimeoutMs ?? 1_000,
    retryStrategy: retry,
    ...target.auth,
    ...(target.tls ? { tls: {} } : {}),
  };
  let client: RedisClient;
  if (target.mode === 'single') {
    client = new Redis(target.url, common);
  } else if (target.mode === 'sentinel') {
    client = new Redis({
      ...common,
      sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
      name: target.master,
      role: 'master',
      enableTLSForSentinelMode: target.tls,
      sentinelRetryStrategy: retry,
      // Not ioredis's failoverDetector: a +switch-master arriving while the connection waits to
      // reconnect (the usual case, the primary having died) ended the connection for good in 1 of 3
      // tries here (ioredis 5.11). Reconnecting asks the sentinels anew, so the retry finds the new
      // primary within one retry step of its promotion.
    });
  } else {
    const clusterOptions: ClusterOptions = {
      enableOfflineQueue: options.offlineQueue ?? false,
      enableReadyCheck: true,
      // Per-node connections: fail fast, as above. A node lost is dropped, and the slot map refreshed.
      redisOptions: perNode(common),
      clusterRetryStrategy: retry,
      // A command follows at most 4 redirections (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) 100 ms apart:
      // with the 1 s timeout, no command waits much past 1.5 s on a Cluster mid-failover.
      maxRedirections: 4,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: 1_000,
      // A promoted replica is found by a MOVED or a lost node at once; the interval catches the rest.
      slotsRefreshInterval: 2_000,
      scaleReads: 'master',
    };
    client = new Cluster(
      target.nodes.map(({ host, port }) => ({ host, port })),
      clusterOptions,
    );
  }
  client.on('error', () => {}); // each user reports an outage once, as it meets it

  const primaries = (): Redis[] => (client instanceof Cluster ? client.nodes('master') : [client]);
  const primary = (): string => {
    if (client instanceof Cluster) {
      return primaries()
        .map((node) => `${node.options.host}:${node.options.port}`)
        .sort()
        .join(',');
    }
    const stream = (client as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
    return stream?.remotePort === undefined ? '' : `${stream.remoteAddress}:${stream.remotePort}`;
  };
  // A failover: the primary serving differs from the one that served before. Noted on `ready` (a
  // server or Sentinel primary reconnected) and after a Cluster's slot map refresh.
  let serving = '';
  const notice = () => {
    const now = primary();
    if (now === '' || now === serving) return;
    // A failover brings a primary not serving before. A Cluster's map without the lost node (before
    // its replica is promoted) is not one yet, so a failover is told once, when the new one serves.
    const before = new Set(serving.split(','));
    if (serving !== '' && now.split(',').some((address) => !before.has(address))) options.onFailover?.(serving, now);
    serving = now;
  };
  client.on('ready', notice);
  if (client instanceof Cluster) client.on('refresh', notice);

  return {
    client,
    primaries,
    close() {
      client.disconnect();
    },
  };
}
