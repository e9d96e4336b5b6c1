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
 *
 * A connection that has not served says why in the one line that refuses start-up (startFailure):
 * what Redis (or TLS) said and what it means, never a credential. Every such mistake (a wrong
 * password, TLS to a plain server, a Cluster or Sentinel list naming a plain server) used to read
 * "did not answer within 3 s", which sent operators to start a Redis that was running.
 */

import { connect, isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '../../../config.js';

export type RedisClient = Redis | Cluster;
export interface RedisConnection {
  readonly client: RedisClient;
  /** Every primary (one outside a Cluster): what a SCAN over all keys must visit. */
  primaries(): Redis[];
  /**
   * Why this connection has not served, as the one line that refuses start-up, `variable` being
   * the setting that chose the mode: what Redis (or TLS) said last, never a credential. `refused`:
   * a command's failure at start, told when Redis answered it with an error (an ACL's NOPERM).
   */
  startFailure(variable: string, refused?: unknown): Promise<string>;
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
      // REDIS_TLS is TLS to the servers the sentinels name and to the sentinels themselves (ioredis
      // asks sentinels in plain text unless given sentinelTLS).
      enableTLSForSentinelMode: target.tls,
      ...(target.tls ? { sentinelTLS: {} } : {}),
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
  // Each user reports an outage once, as it meets it; the last error is kept for startFailure(),
  // but not one that closing the connection causes.
  let lastError: Error | undefined;
  let closed = false;
  client.on('error', (error: Error) => {
    // ioredis's own refusal of a command while disconnected says nothing of why it is.
    if (!closed && !/^Stream isn't writeable|^Connection is closed/.test(error.message)) lastError = error;
  });
  client.on('ready', () => {
    lastError = undefined;
  });

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
  const watch = failoverWatch((from, to) => options.onFailover?.(from, to));
  const notice = () => watch(primary());
  client.on('ready', notice);
  if (client instanceof Cluster) client.on('refresh', notice);

  return {
    client,
    primaries,
    startFailure: (variable, refused) => describeStartFailure(target, variable, lastError ?? answered(refused)),
    close() {
      closed = true;
      client.disconnect();
    },
  };
}

/** How long a primary that stopped serving counts as having served: its return within it is no failover. */
const FLAP_MS = 60_000;

/**
 * Tells each failover once, given the primaries serving (comma-joined addresses) each time they may
 * have changed: when one serves that has not served within FLAP_MS. A Cluster's map without the lost
 * node (before its replica is promoted) is no failover yet; and one refreshed from a node that has
 * not yet heard of the promotion may show the dead primary again for a moment (seen here: new, old,
 * new within 200 ms, told three times when "new" meant "not serving just before").
 */
export function failoverWatch(
  onFailover: (from: string, to: string) => void,
  now: () => number = Date.now,
): (serving: string) => void {
  /** Until when each primary no longer serving served. */
  const served = new Map<string, number>();
  let serving = '';
  return (current) => {
    if (current === '' || current === serving) return;
    const at = now();
    const before = serving === '' ? [] : serving.split(',');
    for (const address of before) served.set(address, at);
    for (const [address, until] of served) if (until < at - FLAP_MS) served.delete(address);
    const addresses = current.split(',');
    const fresh = addresses.some((address) => !before.includes(address) && !served.has(address));
    for (const address of addresses) served.delete(address);
    if (before.length > 0 && fresh) onFailover(serving, current);
    serving = current;
  };
}

/** A command's failure that is Redis's answer (ioredis's ReplyError), not a time-out or a closed connection. */
function answered(error: unknown): Error | undefined {
  return error instanceof Error && error.name === 'ReplyError' ? error : undefined;
}

/** What the words of Redis (or of TLS) mean for the operator, and what to change. */
const ANSWERS: readonly [RegExp, 'Redis answered' | 'TLS said', string][] = [
  [/^(WRONGPASS|NOAUTH)|invalid (username-)?password/i, 'Redis answered', 'check REDIS_USERNAME and REDIS_PASSWORD'],
  [
    /cluster support disabled/i,
    'Redis answered',
    'it is not a Redis Cluster node (for one server, set REDIS_URL instead)',
  ],
  [
    /unknown command .sentinel/i,
    'Redis answered',
    'it is not a sentinel (REDIS_SENTINELS lists the sentinels, on port 26379 by default, not Redis servers)',
  ],
  [
    /^NOPERM/,
    'Redis answered',
    "the user's ACL forbids a command the gateway runs (docs/operations.md lists them: scripts, keys and channels under its prefix)",
  ],
  [/certificate/i, 'TLS said', "the server's certificate is not trusted (NODE_EXTRA_CA_CERTS names a CA to trust)"],
];

/**
 * The start-up refusal for `target`: Redis's last answer and what it means; else a server that
 * speaks Redis without TLS where TLS was asked for, or TLS only where it was not (a handshake with
 * the wrong kind fails in several ways, none of which says so: the server is asked); else that it
 * did not answer, with the connection's last error.
 */
async function describeStartFailure(target: RedisTarget, variable: string, error: Error | undefined): Promise<string> {
  // A Cluster reports the node's error inside its own; ioredis's Sentinel connector quotes the last sentinel's.
  const cause = (error as { lastNodeError?: Error } | undefined)?.lastNodeError ?? error;
  const said = cause && scrub(/Last error: (.+)$/s.exec(cause.message)?.[1] ?? cause.message, target);
  const answer = said === undefined ? undefined : ANSWERS.find(([pattern]) => pattern.test(said));
  if (answer !== undefined) return `${variable}: ${answer[1]} "${said}" at start; ${answer[2]}`;
  const [host, port] = firstAddress(target);
  if (target.tls && (await speaksPlainRedis(host, port))) {
    const instead = target.mode === 'single' ? 'use redis:// instead of rediss://' : 'set REDIS_TLS=false';
    return `${variable}: no TLS session with ${host}:${port} at start: the server there speaks Redis without TLS; ${instead}, or turn TLS on in Redis`;
  }
  if (!target.tls && (await speaksTls(host, port))) {
    const instead = target.mode === 'single' ? 'use rediss:// instead of redis://' : 'set REDIS_TLS=true';
    return `${variable}: ${host}:${port} answered with TLS at start, and the gateway spoke Redis without it; ${instead}`;
  }
  const why = said === undefined ? '' : ` (${said})`;
  return `${variable} did not answer within 3 s at start${why}; start Redis, or unset ${variable}`;
}

/** Longest part of what Redis said that is repeated in the refusal. */
const MAX_SAID = 200;

/** `text` without the password (as configured, and as a URL carries it), cut to MAX_SAID. */
function scrub(text: string, target: RedisTarget): string {
  const url = target.mode === 'single' ? new URL(target.url) : undefined;
  const secrets = [target.auth.password, url?.password, url?.password ? decodeURIComponent(url.password) : undefined];
  let scrubbed = text.trim();
  for (const secret of secrets) if (secret) scrubbed = scrubbed.split(secret).join('[redacted]');
  return scrubbed.length > MAX_SAID ? `${scrubbed.slice(0, MAX_SAID)}…` : scrubbed;
}

/** The one server, or the first Cluster node or sentinel: where a refusal looks. */
function firstAddress(target: RedisTarget): [host: string, port: number] {
  if (target.mode === 'single') {
    const url = new URL(target.url);
    return [url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 6379)];
  }
  const [first] = target.mode === 'cluster' ? target.nodes : target.sentinels;
  return [first?.host ?? '', first?.port ?? 0];
}

/** Whether `host:port` completes a TLS handshake (its certificate aside: only the protocol is asked). */
function speaksTls(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port, rejectUnauthorized: false, servername: isIP(host) ? undefined : host });
    const done = (tls: boolean) => {
      socket.destroy();
      resolve(tls);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('secureConnect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

/**
 * Whether `host:port` answers a plain PING as Redis does ("+PONG", or an error such as "-NOAUTH"):
 * a server without TLS there. A TLS handshake with one fails in more than one way (a timeout while
 * Redis waits for the end of a line, a reset when it has read one), none of which says so.
 */
function speaksPlainRedis(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (plain: boolean) => {
      socket.destroy();
      resolve(plain);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
    socket.once('data', (chunk: Buffer) => done(chunk[0] === 0x2b || chunk[0] === 0x2d));
    socket.write('PING\r\n');
  });
}
