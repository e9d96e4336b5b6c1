/**
 * A real redis-server for tests: started on a free port, stopped by its pid. Restartable on the
 * same port, so a test can take Redis away and bring it back under a running gateway. And a Redis
 * Cluster (3 primaries, 3 replicas) and a Sentinel set (primary, replica, 3 sentinels), each of real
 * redis-server processes on free ports, each stopped by its pid, whose primary a test can SIGKILL.
 *
 * The server runs in the foreground as our child (no --daemonize, no pidfile): a pidfile read
 * before Redis rewrites it gives an empty string (pid 0, which signals our whole process group)
 * or the pid of the server before a restart (which then never gets stopped). The pid used is the
 * one the server itself reports (`INFO server`, `process_id`) once it answers, checked against the
 * child we spawned, so a Redis of someone else's that took the port is never mistaken for ours.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkedPid, freePort, isAlive, redisFolderPrefix, stopProcess } from './processes.js';
import { until } from './until.js';

const run = promisify(execFile);

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** The running server's pid (from `INFO server`), or undefined while it is stopped. */
  readonly pid: number | undefined;
  /** Runs one redis-cli command against it (FLUSHALL, DBSIZE…). */
  cli(...args: string[]): Promise<string>;
  /** Kills the server (SIGKILL: state lost, as in a crash) and waits until it is gone; `start` brings it back on the same port. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Kills it for good and removes its folder. */
  stop(): Promise<void>;
}

/** How long a starting server may take to answer PING, on a loaded machine. */
const START_TIMEOUT_MS = 15_000;

/** `args`: more of redis-server's settings (`--rename-command FCALL ''` plays a Redis before 7.0). */
export async function startRedis(args: readonly string[] = []): Promise<RedisServer> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), redisFolderPrefix()));
  const log = join(dir, 'redis.log');
  let pid: number | undefined;
  /** Resolves once the running server has exited whole (every thread, so its port is free again). */
  let exitedWhole: Promise<unknown> = Promise.resolve();

  async function start(): Promise<void> {
    if (pid !== undefined) throw new Error(`redis-server ${pid} is already running on port ${port}`);
    // `cwd` is the run's folder too: redis-server overwrites its environment (its process title),
    // so the test-run marker it inherits cannot be read back; the folder names the run instead.
    const child = spawn(
      'redis-server',
      // DEBUG SLEEP plays a Redis that stalls without dropping connections (a slow command, a fork).
      [...serverArgs(port, dir, log), '--enable-debug-command', 'local', ...args],
      { cwd: dir, stdio: 'ignore' },
    );
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(`exited (${signal ?? code})`));
      child.once('error', (error) => resolve(`could not be started: ${error.message}`));
    });
    exitedWhole = exited;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const reported = await serverPid().catch(() => undefined);
      if (reported !== undefined) {
        if (reported !== child.pid) {
          await stopChild(child);
          throw new Error(`port ${port} is served by another redis-server (pid ${reported}), not ours`);
        }
        pid = reported;
        return;
      }
      const early = await Promise.race([exited, delay(50).then(() => undefined)]);
      if (early !== undefined) throw new Error(`redis-server on port ${port} ${early}: ${await lastLine(log)}`);
    }
    await stopChild(child);
    throw new Error(`redis-server did not answer on port ${port} within ${START_TIMEOUT_MS} ms`);
  }

  /** The pid the server on our port reports, once it answers. */
  async function serverPid(): Promise<number> {
    const info = await cli('INFO', 'server');
    return checkedPid(/^process_id:(\d+)\s*$/m.exec(info)?.[1]);
  }

  async function kill(): Promise<void> {
    if (pid === undefined) return;
    const stopping = pid;
    pid = undefined;
    await stopProcess(stopping, 'SIGKILL');
    // A zombie leader can still have threads holding the listening socket until the whole process is reaped.
    await exitedWhole;
  }

  async function cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 });
    return stdout.trim();
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return pid;
    },
    cli,
    start,
    kill,
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid !== undefined && (await isAlive(child.pid))) await stopProcess(child.pid, 'SIGKILL');
}

async function lastLine(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.trim().split('\n').at(-1) ?? '';
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One redis-server (or sentinel) of a Cluster or Sentinel set: a foreground child, stopped by its pid. */
interface Member {
  readonly port: number;
  readonly pid: number;
  /** SIGKILL (a crash: what it did not replicate is lost), waiting until it is gone. */
  kill(): Promise<void>;
}

/** A test server's own settings: loopback only, nothing kept on disk, its log in its folder. */
function serverArgs(port: number, dir: string, log: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--logfile',
    log,
  ];
}

async function startMember(dir: string, port: number, args: string[], configFile?: string): Promise<Member> {
  const log = join(dir, `redis-${port}.log`);
  const child = spawn('redis-server', [...(configFile ? [configFile] : []), ...serverArgs(port, dir, log), ...args], {
    cwd: dir,
    stdio: 'ignore',
  });
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(`exited (${signal ?? code})`));
    child.once('error', (error) => resolve(`could not be started: ${error.message}`));
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const info = await cliAt(port, 'INFO', 'server').catch(() => '');
    const reported = /^process_id:(\d+)\s*$/m.exec(info)?.[1];
    if (reported !== undefined) {
      const pid = checkedPid(reported);
      if (pid !== child.pid) {
        await stopChild(child);
        throw new Error(`port ${port} is served by another redis-server (pid ${pid}), not ours`);
      }
      let gone = false;
      return {
        port,
        pid,
        async kill() {
          if (gone) return;
          gone = true;
          await stopProcess(pid, 'SIGKILL');
          await exited;
        },
      };
    }
    const early = await Promise.race([exited, delay(50).then(() => undefined)]);
    if (early !== undefined) throw new Error(`redis-server on port ${port} ${early}: ${await lastLine(log)}`);
  }
  await stopChild(child);
  throw new Error(`redis-server did not answer on port ${port} within ${START_TIMEOUT_MS} ms`);
}

async function cliAt(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 });
  return stdout.trim();
}

/**
 * Sums `INFO commandstats` calls per command over the primaries among `ports`: a replica counts the
 * writes it applies again, which are no load the gateway puts on Redis. Commands a script runs
 * (redis.call) are counted too, as Redis counts them.
 */
async function commandCalls(ports: readonly number[]): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  for (const port of ports) {
    if (!(await cliAt(port, 'ROLE').catch(() => '')).startsWith('master')) continue;
    const info = await cliAt(port, 'INFO', 'commandstats').catch(() => '');
    for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      totals.set(name as string, (totals.get(name as string) ?? 0) + Number(calls));
    }
  }
  return totals;
}

export interface RedisHa {
  /** The gateway's environment for this Redis (REDIS_CLUSTER_NODES, or REDIS_SENTINELS and REDIS_SENTINEL_MASTER). */
  readonly env: Readonly<Record<string, string>>;
  /** The data servers' ports (primaries and replicas; no sentinels). */
  readonly dataPorts: readonly number[];
  /** The port of the primary that serves `key` now. */
  primaryFor(key: string): Promise<number>;
  /** SIGKILLs the server on `port` (a primary crash); the set fails over by itself. */
  kill(port: number): Promise<void>;
  /** Resolves once `key` is served by a primary other than `port` (the failover done). */
  failedOver(key: string, port: number): Promise<void>;
  /** `INFO commandstats` calls per command, summed over the live primaries. */
  commandCalls(): Promise<Map<string, number>>;
  /** Every process stopped by its pid, the folder removed. */
  close(): Promise<void>;
}

/**
 * One Cluster member on free ports. A port found free may be taken before redis-server binds it
 * (other test files pick ports at the same time): it refuses to start, saying so, and is started again
 * on other ports, three tries at most.
 */
async function clusterMember(dir: string, nodeTimeoutMs: number): Promise<Member> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await startMember(dir, port, [
        '--cluster-enabled',
        'yes',
        // A bus port of its own: by default it is port + 10000, and redis-server refuses a port above
        // 55535 then, which a free port may be where the kernel's ephemeral range reaches higher.
        '--cluster-port',
        String(await freePort()),
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        // A replica promoted as soon as it sees its primary fail, however long since its last sync.
        '--cluster-replica-validity-factor',
        '0',
      ]);
    } catch (error) {
      if (attempt === 3 || !String(error).includes('Failed listening')) throw error;
    }
  }
}

/**
 * A Redis Cluster of 3 primaries and 3 replicas on free ports (Debian's redis-server alone), with a short
 * cluster-node-timeout so a SIGKILLed primary's replica is promoted in about 2 s.
 */
export async function startRedisCluster(nodeTimeoutMs = 1_000): Promise<RedisHa> {
  const dir = await mkdtemp(join(tmpdir(), redisFolderPrefix()));
  const members: Member[] = [];
  const close = async () => {
    for (const member of members) await member.kill();
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  };
  try {
    for (let i = 0; i < 6; i++) members.push(await clusterMember(dir, nodeTimeoutMs));
    const addresses = members.map((member) => `127.0.0.1:${member.port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: 30_000,
    });
    await until('cluster ok on every node', async () => {
      for (const member of members) {
        if (!(await cliAt(member.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
      }
      return true;
    });
  } catch (error) {
    await close();
    throw error;
  }
  const alive = () => members.map((member) => member.port);
  const dead = new Set<number>();
  const live = () => alive().filter((port) => !dead.has(port));
  async function primaryFor(key: string): Promise<number> {
    const slot = Number(await cliAt(live()[0] as number, 'CLUSTER', 'KEYSLOT', key));
    // CLUSTER SLOTS as text: ranges, then the primary's host and port.
    const text = await cliAt(live()[0] as number, 'CLUSTER', 'SLOTS');
    const lines = text.split('\n');
    for (let i = 0; i + 3 < lines.length; i++) {
      const from = Number(lines[i]);
      const to = Number(lines[i + 1]);
      if (lines[i + 2] === '127.0.0.1' && slot >= from && slot <= to) return Number(lines[i + 3]);
    }
    throw new Error(`no primary for slot ${slot}`);
  }
  return {
    env: {
      REDIS_CLUSTER_NODES: alive()
        .map((port) => `127.0.0.1:${port}`)
        .join(','),
    },
    dataPorts: alive(),
    primaryFor,
    async kill(port) {
      dead.add(port);
      await members.find((member) => member.port === port)?.kill();
    },
    async failedOver(key, port) {
      await until('a replica promoted', async () => (await primaryFor(key)) !== port);
      await until('cluster ok again', async () => {
        for (const p of live()) if (!(await cliAt(p, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
        return true;
      });
    },
    commandCalls: () => commandCalls(live()),
    close,
  };
}

/**
 * A primary, one replica and 3 sentinels on free ports (redis-server --sentinel), master name `gateway`,
 * down-after-milliseconds short so a SIGKILLed primary is replaced in a couple of seconds.
 */
export async function startRedisSentinel(downAfterMs = 1_000): Promise<RedisHa> {
  const { master, data, sentinelPorts, members, close } = await startSentinelSet({ downAfterMs });
  const dead = new Set<number>();
  async function primaryFor(): Promise<number> {
    for (const port of sentinelPorts) {
      const text = await cliAt(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', master).catch(() => '');
      const found = Number(text.split('\n')[1]);
      if (found > 0) return found;
    }
    throw new Error('no sentinel names a primary');
  }
  return {
    env: {
      REDIS_SENTINELS: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      REDIS_SENTINEL_MASTER: master,
    },
    dataPorts: data,
    primaryFor,
    async kill(port) {
      dead.add(port);
      await members.find((member) => member.port === port)?.kill();
    },
    async failedOver(_key, port) {
      await until('sentinels named a new primary', async () => {
        const now = await primaryFor();
        return now !== port && (await cliAt(now, 'ROLE')).startsWith('master');
      });
    },
    commandCalls: () => commandCalls(data.filter((port) => !dead.has(port))),
    close,
  };
}

export interface RedisTls {
  /** The port that speaks TLS only (the gateway's `rediss://`). */
  readonly tlsPort: number;
  /** The CA that signed the server's certificate (for NODE_EXTRA_CA_CERTS). */
  readonly caFile: string;
  /** Runs one redis-cli command over the plain port, which only the test uses. */
  cli(...args: string[]): Promise<string>;
  /** Kills it by its pid and removes its folder (certificates included). */
  close(): Promise<void>;
}

/**
 * A redis-server speaking TLS on a port of its own, with a certificate for 127.0.0.1 signed by a CA
 * made for the test with openssl (nothing here can be had from a real CA), and `password` required
 * once it runs. Its plain port stays open for the test's own redis-cli.
 */
export async function startRedisTls(password: string): Promise<RedisTls> {
  const dir = await mkdtemp(join(tmpdir(), redisFolderPrefix()));
  let member: Member | undefined;
  const close = async () => {
    await member?.kill();
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  };
  try {
    const file = await makeCertificates(dir);
    const [port, tlsPort] = [await freePort(), await freePort()];
    member = await startMember(dir, port, tlsArgs(tlsPort, file));
    await cliAt(port, 'CONFIG', 'SET', 'requirepass', password);
    const cli = (...args: string[]) => cliAt(port, '--no-auth-warning', '-a', password, ...args);
    return { tlsPort, caFile: file('ca.crt'), cli, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * A CA made for the test and a certificate for 127.0.0.1 signed by it, in `dir` (ca.crt, redis.crt,
 * redis.key; nothing here can be had from a real CA); returns the path of a file there by name.
 */
async function makeCertificates(dir: string): Promise<(name: string) => string> {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir, timeout: 20_000 });
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    '/CN=petstore-test-ca',
  );
  await openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'redis.key',
    '-out',
    'redis.csr',
    '-subj',
    '/CN=127.0.0.1',
  );
  await writeFile(file('ext'), 'subjectAltName=IP:127.0.0.1\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    'redis.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'redis.crt',
    '-days',
    '1',
    '-extfile',
    'ext',
  );
  return file;
}

/** redis-server's options for TLS on `tlsPort` with the certificates makeCertificates() made. */
function tlsArgs(tlsPort: number, file: (name: string) => string): string[] {
  return [
    '--tls-port',
    String(tlsPort),
    '--tls-cert-file',
    file('redis.crt'),
    '--tls-key-file',
    file('redis.key'),
    '--tls-ca-cert-file',
    file('ca.crt'),
    '--tls-auth-clients',
    'no',
  ];
}

export interface RedisSentinelTls {
  /** REDIS_SENTINELS (the sentinels' TLS ports), REDIS_SENTINEL_MASTER and REDIS_TLS. */
  readonly env: Record<string, string>;
  /** The CA that signed every member's certificate (for NODE_EXTRA_CA_CERTS). */
  readonly caFile: string;
  /** Runs one redis-cli command on the primary's plain port, which only the test uses. */
  cli(...args: string[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * A primary, a replica and 3 sentinels speaking TLS to each other and to clients (each keeps a
 * plain port for the test's own redis-cli, as startRedisTls does), with certificates made by
 * makeCertificates(); every process stopped by its pid.
 */
export async function startRedisSentinelTls(): Promise<RedisSentinelTls> {
  const set = await startSentinelSet({ downAfterMs: 1_000, tls: true });
  return {
    env: {
      REDIS_SENTINELS: set.sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      REDIS_SENTINEL_MASTER: set.master,
      REDIS_TLS: 'true',
    },
    caFile: set.caFile as string,
    cli: (...args) => cliAt(set.plainPorts[0] as number, ...args),
    close: set.close,
  };
}

/**
 * A primary, a replica and 3 sentinels (master name `gateway`), every process stopped by its pid.
 * With `tls`, each speaks TLS to clients and to the others, with certificates from
 * makeCertificates(), and keeps a plain port for the test's own redis-cli (`plainPorts`: the
 * primary's first); the ports it reports (`data`, `sentinelPorts`) are then its TLS ones.
 */
async function startSentinelSet({ downAfterMs, tls = false }: { downAfterMs: number; tls?: boolean }) {
  const dir = await mkdtemp(join(tmpdir(), redisFolderPrefix()));
  const members: Member[] = [];
  const master = 'gateway';
  const close = async () => {
    for (const member of members.reverse()) await member.kill();
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  };
  const [data, sentinelPorts, plainPorts]: number[][] = [[], [], []];
  try {
    const file = tls ? await makeCertificates(dir) : undefined;
    /** Starts a member on a free port: its plain port, and the one clients use (its TLS port with `tls`). */
    const member = async (args: string[], configFile?: string) => {
      const plain = await freePort();
      const served = file ? await freePort() : plain;
      const tlsOptions = file ? [...tlsArgs(served, file), '--tls-replication', 'yes'] : [];
      members.push(await startMember(dir, plain, [...tlsOptions, ...args], configFile));
      plainPorts.push(plain);
      return served;
    };
    const primary = await member([]);
    data.push(primary, await member(['--replicaof', '127.0.0.1', String(primary)]));
    await until('replica in sync', async () =>
      (await cliAt(plainPorts[1] as number, 'INFO', 'replication')).includes('master_link_status:up'),
    );
    for (let i = 0; i < 3; i++) {
      const conf = join(dir, `sentinel-${i}.conf`);
      await writeFile(
        conf,
        [
          `sentinel monitor ${master} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${master} ${downAfterMs}`,
          `sentinel failover-timeout ${master} 5000`,
          `sentinel parallel-syncs ${master} 1`,
          '',
        ].join('\n'),
      );
      sentinelPorts.push(await member(['--sentinel'], conf));
    }
    await until('sentinels see each other and the replica', async () => {
      const info = await cliAt(plainPorts[2] as number, 'SENTINEL', 'MASTER', master);
      const lines = info.split('\n');
      const get = (name: string) => Number(lines[lines.indexOf(name) + 1]);
      return get('num-other-sentinels') >= 2 && get('num-slaves') >= 1;
    });
    return { master, data, sentinelPorts, plainPorts, members, close, caFile: file?.('ca.crt') };
  } catch (error) {
    await close();
    throw error;
  }
}
