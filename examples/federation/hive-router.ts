/**
 * Hive Gateway as the federation example's router: a child process (`hive-gateway supergraph FILE`)
 * that serves a composed supergraph, configured by hive-gateway/gateway.config.ts. It is installed
 * on demand into hive-gateway/ (about 750 packages, 500 MB, a minute or two), so the project's own
 * `npm ci` stays small; the lockfile there pins what gets installed.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where Hive Gateway is installed and where it runs (it loads gateway.config.ts from there). */
export const HIVE_GATEWAY_DIR = fileURLToPath(new URL('./hive-gateway/', import.meta.url));
const PACKAGE = `${HIVE_GATEWAY_DIR}node_modules/@graphql-hive/gateway/`;
const BIN = `${PACKAGE}dist/bin.js`;
/** npm writes its hidden lockfile once an install has completed: an interrupted one leaves none. */
const INSTALL_COMPLETE = `${HIVE_GATEWAY_DIR}node_modules/.package-lock.json`;

/** Installed completely, at the version hive-gateway/package.json pins. */
export function isHiveGatewayInstalled(): boolean {
  if (!existsSync(INSTALL_COMPLETE) || !existsSync(BIN)) return false;
  const pinned = readJson(`${HIVE_GATEWAY_DIR}package.json`).dependencies?.['@graphql-hive/gateway'];
  return readJson(`${PACKAGE}package.json`).version === pinned;
}

function readJson(path: string): { version?: string; dependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** Runs `npm ci` in hive-gateway/ unless it is installed; `say` gets one line before it starts. */
export async function ensureHiveGateway(say: (line: string) => void): Promise<void> {
  if (isHiveGatewayInstalled()) return;
  say(
    'Hive Gateway is not installed yet: installing @graphql-hive/gateway into examples/federation/hive-gateway/ ' +
      '(once; a minute or two; kept out of the project npm ci)',
  );
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // Packages already in npm's cache are taken from it without asking the registry again (half the
  // time of a revalidating install here); the lockfile's integrity hashes still decide what is installed.
  const child = spawn(npm, ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: HIVE_GATEWAY_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0 || !isHiveGatewayInstalled()) {
    const tail = output.join('').trim().split('\n').slice(-10).join('\n');
    throw new Error(`npm ci in ${HIVE_GATEWAY_DIR} failed (exit ${code}):\n${tail}`);
  }
}

export type HiveLogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface HiveRouterOptions {
  /** The composed supergraph (SDL file). */
  readonly supergraphFile: string;
  /** A real port: Hive Gateway reports the port it was given, so 0 would leave the URL unknown. */
  readonly port: number;
  readonly host: string;
  /** The child's environment (PATH and the like); NODE_ENV and LOG_LEVEL are set here. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly logLevel?: HiveLogLevel;
  /** Each line the child writes (its log); default: dropped. */
  readonly onLine?: (line: string) => void;
  /** How long to wait for /readiness; the machine may be busy. Default 60 s. */
  readonly readyTimeoutMs?: number;
}

export interface HiveRouterHandle {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql. */
  readonly url: string;
  readonly pid: number;
  /** Settles when the child has exited, for whatever reason. */
  readonly exited: Promise<void>;
  /** SIGTERM to the child by its pid, SIGKILL if it has not exited within the deadline; resolves once it has exited. */
  close(): Promise<void>;
}

/** Thrown when the port is taken, so callers can say so in one line. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`port ${port} is already in use`);
  }
}

const STOP_DEADLINE_MS = 10_000;

export async function startHiveRouter(options: HiveRouterOptions): Promise<HiveRouterHandle> {
  if (!isHiveGatewayInstalled()) throw new Error('Hive Gateway is not installed: call ensureHiveGateway first');
  const child = spawn(
    process.execPath,
    [BIN, 'supergraph', options.supergraphFile, '--port', String(options.port), '--host', options.host],
    {
      cwd: HIVE_GATEWAY_DIR,
      // production: Hive Gateway masks unexpected errors without their stack, as a deployed router would.
      env: { ...options.env, NODE_ENV: 'production', LOG_LEVEL: options.logLevel ?? 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    if (lines.length > 50) lines.shift();
    options.onLine?.(line);
  };
  forwardLines(child, onLine);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const handle = {
    url: `http://${displayHost(options.host)}:${options.port}/graphql`,
    pid: child.pid ?? -1,
    exited,
    close: () => stop(child, exited),
  };
  try {
    await waitUntilReady(handle.url, exited, options.readyTimeoutMs ?? 60_000);
  } catch (error) {
    await handle.close();
    if (lines.some((line) => line.includes('EADDRINUSE'))) throw new PortInUseError(options.port);
    throw new Error(`${(error as Error).message}; its last output:\n${lines.slice(-10).join('\n')}`);
  }
  return handle;
}

/** Every interface answers on loopback; an IPv6 literal needs brackets in a URL. */
function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

function forwardLines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) onLine(line);
    });
    stream?.on('end', () => rest && onLine(rest));
  }
}

/** Polls Hive Gateway's /readiness (200 once the supergraph is loaded) until the deadline or the child's exit. */
async function waitUntilReady(graphqlUrl: string, exited: Promise<void>, timeoutMs: number): Promise<void> {
  const readiness = new URL('/readiness', graphqlUrl);
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  while (Date.now() < deadline) {
    if (gone) throw new Error('Hive Gateway exited before it was ready');
    const status = await fetch(readiness, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Hive Gateway was not ready within ${timeoutMs} ms`);
}

async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  signal(child, 'SIGTERM');
  const timer = setTimeout(() => signal(child, 'SIGKILL'), STOP_DEADLINE_MS);
  await exited;
  clearTimeout(timer);
}

/** Signals the child by its own pid (never 0 or a negative, process-group, pid) unless it has exited. */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (!child.pid || child.pid <= 0 || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(child.pid, name);
  } catch (error) {
    // ESRCH: it exited (a Ctrl-C reaches the whole process group) before its exit event ran.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}
