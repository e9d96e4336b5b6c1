/**
 * `npm run bench:throughput`: one page of 20 pets, side by side in one run, on a 2-core machine:
 *
 *   1. REST direct      GET /v1/pets?limit=20 on the reference store
 *   2. our gateway      { pets(first: 20) { nodes { id name status } } }
 *   3. Mesh v1 / Hive   { listPets(limit: 20) { ... on Pet { id name status } } }  (when bench/mesh is set up)
 *
 * Every server is its own process: the gateway under test pinned to core 1 (`taskset -c 1`), the
 * reference store and the load tool on core 0. The store's key has limits no run reaches and our
 * gateway runs with PETSTORE_RATE_LIMITS=off, so both measure plumbing, not rate limiting. Load:
 * wrk (closed loop, one thread) when installed, else autocannon. Each target gets a warm-up, then
 * BENCH_ROUNDS measured runs interleaved across targets; the table shows medians.
 *
 * Settings: BENCH_TOOL (wrk | autocannon), BENCH_CONNECTIONS (32), BENCH_WARMUP (5 s),
 * BENCH_DURATION (10 s), BENCH_ROUNDS (3).
 */

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MESH_DIR = join(ROOT, 'bench/mesh');
const HIVE_BIN = join(MESH_DIR, 'node_modules/.bin/hive-gateway');
const COMPOSE_BIN = join(MESH_DIR, 'node_modules/.bin/mesh-compose');
const CHILD = join(ROOT, 'bench/throughput-child.ts');
const KEY = 'k';

const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const WARMUP_S = positive('BENCH_WARMUP', 5);
const DURATION_S = positive('BENCH_DURATION', 10);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const TOOL = chooseTool();
const LOAD_CORE = '0';
const GATEWAY_CORE = '1';

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer`);
  return value;
}

function has(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function chooseTool(): 'wrk' | 'autocannon' {
  const wanted = process.env.BENCH_TOOL;
  if (wanted !== undefined && wanted !== 'wrk' && wanted !== 'autocannon')
    throw new Error('BENCH_TOOL: wrk or autocannon');
  if (wanted === 'autocannon') return 'autocannon';
  // wrk -v prints its version and exits 1; `command -v` is the honest test.
  if (has('sh', ['-c', 'command -v wrk'])) return 'wrk';
  if (wanted === 'wrk') throw new Error('BENCH_TOOL=wrk but wrk is not installed (apt-get install -y wrk)');
  return 'autocannon';
}

/** One way of asking for the first page of 20 pets. */
interface Target {
  readonly name: string;
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The process serving it (for its CPU time). */
  readonly pid: number;
  /** A file the server logs to, shown if it never answers. */
  readonly log?: string;
  /** Checks one answer holds 20 pets and no error. */
  check(body: any): boolean;
}

interface Measurement {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  /** Non-2xx answers, socket errors and timeouts. */
  readonly errors: number;
  /** CPU seconds the serving process used during the run, and the run's wall-clock seconds. */
  readonly cpuS: number;
  readonly wallS: number;
}

const children: ChildProcess[] = [];
let scratch: string | undefined;

const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

function stopAll(): void {
  for (const child of children) if (running(child)) child.kill('SIGTERM');
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
}

/** Stops every child and waits for them (Hive Gateway watches the supergraph file: remove it only after). */
async function stopAndWait(): Promise<void> {
  await Promise.all(
    children.filter(running).map(
      (child) =>
        new Promise<void>((resolve) => {
          const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  stopAll();
}
process.on('exit', stopAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stopAll();
    process.exit(130);
  });
}

/** Spawns `command` pinned to `core`. */
function pinned(core: string, command: string, args: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  const child = spawn('taskset', ['-c', core, command, ...args], options);
  children.push(child);
  return child;
}

/** Starts a throughput-child.ts server pinned to `core` and waits for its URL. */
async function startChild(core: string, args: string[]): Promise<{ child: ChildProcess; url: string; pid: number }> {
  const child = pinned(core, process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    // As deployed, and as Hive Gateway runs here: graphql-js skips its development checks.
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`throughput-child ${args[0]} exited with ${code}`)));
    child.on('message', (message: { type?: string; url?: string }) => {
      if (message?.type === 'ready' && message.url) resolve(message.url);
    });
  });
  return { child, url, pid: child.pid as number };
}

function storeCounts(store: ChildProcess): Promise<{ requests: number; notOk: number }> {
  return new Promise((resolve) => {
    const onMessage = (message: { type?: string; requests: number; notOk: number }): void => {
      if (message?.type !== 'count') return;
      store.off('message', onMessage);
      resolve({ requests: message.requests, notOk: message.notOk });
    };
    store.on('message', onMessage);
    store.send({ type: 'count' });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Composes a supergraph against `storeUrl` and starts Hive Gateway on it, one process, pinned. */
async function startMesh(storeUrl: string, dir: string): Promise<{ url: string; log: string; pid: number }> {
  const supergraph = join(dir, 'supergraph.graphql');
  execFileSync(COMPOSE_BIN, ['-o', supergraph], {
    cwd: MESH_DIR,
    env: { ...process.env, PETSTORE_URL: storeUrl },
    stdio: 'ignore',
  });
  const port = await freePort();
  // cwd is the scratch folder, so Hive Gateway serves the supergraph alone (bench/mesh/mesh.config.ts
  // would be picked up as its config file).
  const hive = pinned(
    GATEWAY_CORE,
    process.execPath,
    [HIVE_BIN, 'supergraph', supergraph, '--port', String(port), '--fork', '1'],
    { cwd: dir, env: { ...process.env, NODE_ENV: 'production', TOKEN: KEY }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Its log goes to a file in the scratch folder, shown only if it never serves.
  const log = join(dir, 'hive-gateway.log');
  for (const stream of [hive.stdout, hive.stderr]) stream?.on('data', (chunk: Buffer) => appendFileSync(log, chunk));
  return { url: `http://127.0.0.1:${port}/graphql`, log, pid: hive.pid as number };
}

async function send(target: Target): Promise<{ ok: boolean; text: string }> {
  const response = await fetch(target.url, {
    method: target.method,
    headers: target.headers,
    ...(target.body === undefined ? {} : { body: target.body }),
  });
  const text = await response.text();
  let ok = false;
  try {
    ok = response.ok && target.check(JSON.parse(text));
  } catch {}
  return { ok, text };
}

async function waitUntilServing(target: Target, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const { ok, text } = await send(target);
      if (ok) return;
      last = text;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const log =
    target.log !== undefined && existsSync(target.log)
      ? `
its log:
${readFileSync(target.log, 'utf8').slice(-2000)}`
      : '';
  throw new Error(`${target.name} did not answer correctly within ${timeoutMs} ms: ${last.slice(0, 300)}${log}`);
}

function wrkScript(target: Target): string {
  const lines = [`wrk.method = "${target.method}"`];
  for (const [name, value] of Object.entries(target.headers)) lines.push(`wrk.headers["${name}"] = "${value}"`);
  if (target.body !== undefined) lines.push(`wrk.body = [==[${target.body}]==]`);
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("RESULT %d %d %d %f %f\\n", summary.requests, summary.duration,',
    '    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(99)))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

/** Runs the load tool (pinned to the load core) against `target` for `seconds`. */
async function load(
  target: Target,
  seconds: number,
  dir: string,
  connections = CONNECTIONS,
): Promise<Omit<Measurement, 'cpuS' | 'wallS'>> {
  if (TOOL === 'wrk') {
    const script = join(dir, 'request.lua');
    writeFileSync(script, wrkScript(target));
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, target.url];
    const out = await run(pinned(LOAD_CORE, 'wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] }));
    const match = /^RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)$/m.exec(out);
    if (!match) throw new Error(`unexpected wrk output:\n${out}`);
    const [requests, durationUs, errors, p50Us, p99Us] = match.slice(1).map(Number) as [
      number,
      number,
      number,
      number,
      number,
    ];
    return { rps: requests / (durationUs / 1e6), p50Ms: p50Us / 1000, p99Ms: p99Us / 1000, requests, errors };
  }
  const args = [join(ROOT, 'node_modules/autocannon/autocannon.js'), '--json', '-c', String(connections)];
  args.push('-d', String(seconds), '-m', target.method, '-t', '10');
  for (const [name, value] of Object.entries(target.headers)) args.push('-H', `${name}=${value}`);
  if (target.body !== undefined) args.push('-b', target.body);
  args.push(target.url);
  const out = await run(pinned(LOAD_CORE, process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] }));
  const result = JSON.parse(out);
  return {
    rps: result.requests.total / (result.duration || seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system) process `pid` has used, from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** One measured run, with the serving process's CPU time around it. */
async function measure(target: Target, seconds: number, dir: string): Promise<Measurement> {
  const cpuBefore = cpuSeconds(target.pid);
  const start = performance.now();
  const measurement = await load(target, seconds, dir);
  const wallS = (performance.now() - start) / 1000;
  return { ...measurement, cpuS: cpuSeconds(target.pid) - cpuBefore, wallS };
}

function run(child: ChildProcess): Promise<string> {
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`load tool exited with ${code}: ${out}`)),
    );
  });
}

const percent = (share: number): string => `${(share * 100).toFixed(0)}%`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const twentyPets = (pets: unknown): boolean =>
  Array.isArray(pets) && pets.length === 20 && pets.every((pet) => typeof pet?.name === 'string');

async function main(): Promise<void> {
  try {
    execFileSync('taskset', ['-a', '-cp', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
  } catch {}
  const loadStart = loadavg()[0] as number;
  scratch = mkdtempSync(join(tmpdir(), 'bench-throughput-'));
  const store = await startChild(LOAD_CORE, ['store']);
  const gateway = await startChild(GATEWAY_CORE, ['gateway', store.url]);
  const json = { 'content-type': 'application/json' };
  const targets: Target[] = [
    {
      name: 'REST direct: `GET /v1/pets?limit=20`',
      url: `${store.url}/pets?limit=20`,
      method: 'GET',
      headers: { authorization: `Bearer ${KEY}` },
      pid: store.pid,
      check: twentyPets,
    },
    {
      name: 'our gateway: `pets(first: 20) { nodes { id name status } }`',
      url: gateway.url,
      pid: gateway.pid,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ query: '{ pets(first: 20) { nodes { id name status } } }' }),
      check: (body) => body.errors === undefined && twentyPets(body.data?.pets?.nodes),
    },
  ];
  const meshNote = existsSync(HIVE_BIN)
    ? undefined
    : 'Mesh / Hive Gateway: skipped, bench/mesh is not set up (npm run bench:mesh:setup installs it, about 1 minute).';
  if (meshNote === undefined) {
    const mesh = await startMesh(store.url, scratch);
    targets.push({
      name: 'Mesh v1 + Hive Gateway 2.15.1: `listPets(limit: 20) { ... on Pet { id name status } }`',
      url: mesh.url,
      log: mesh.log,
      pid: mesh.pid,
      method: 'POST',
      headers: json,
      body: JSON.stringify({ query: '{ listPets(limit: 20) { ... on Pet { id name status } } }' }),
      check: (body) => body.errors === undefined && twentyPets(body.data?.listPets),
    });
  }

  const callsPerQuery: number[] = [];
  for (const target of targets) {
    await waitUntilServing(target);
    const before = await storeCounts(store.child);
    await send(target);
    callsPerQuery.push((await storeCounts(store.child)).requests - before.requests);
  }

  const version = TOOL === 'wrk' ? 'wrk 4.1 (1 thread, closed loop)' : 'autocannon 9 (closed loop)';
  console.log(`\nLoad: ${version}, ${CONNECTIONS} connections, per target ${WARMUP_S} s warm-up, then`);
  console.log(`${ROUNDS} × ${DURATION_S} s measured runs interleaved across targets; medians below.`);
  console.log(
    `Cores: gateway under test pinned to ${GATEWAY_CORE}; load tool, reference store (and this script) on ${LOAD_CORE}.`,
  );
  if (meshNote) console.log(meshNote);

  for (const target of targets) {
    console.log(`warm-up: ${target.name}`);
    await load(target, WARMUP_S, scratch);
  }
  const results: Measurement[][] = targets.map(() => []);
  const storeBefore = await storeCounts(store.child);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, target] of targets.entries()) {
      const m = await measure(target, DURATION_S, scratch);
      results[index]?.push(m);
      console.log(
        `round ${round}: ${target.name}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50Ms.toFixed(2)} ms, p99 ${m.p99Ms.toFixed(2)} ms, server CPU ${percent(m.cpuS / m.wallS)}, errors ${m.errors}`,
      );
      if (!(await send(target)).ok) throw new Error(`${target.name} stopped answering correctly`);
    }
  }
  const storeAfter = await storeCounts(store.child);

  const rows = targets.map((target, index) => {
    const runs = results[index] as Measurement[];
    return {
      name: target.name,
      rps: median(runs.map((m) => m.rps)),
      p50: median(runs.map((m) => m.p50Ms)),
      p99: median(runs.map((m) => m.p99Ms)),
      errors: runs.reduce((sum, m) => sum + m.errors, 0),
      busy: median(runs.map((m) => m.cpuS / m.wallS)),
      cpuMsPerRequest: median(runs.map((m) => (m.cpuS * 1000) / m.requests)),
      calls: callsPerQuery[index] as number,
    };
  });
  const ours = rows[1]?.rps as number;
  const rest = rows[0]?.rps as number;
  console.log(
    '\n| target | req/s | p50 ms | p99 ms | req/s vs our gateway | req/s vs REST | server CPU busy | server CPU ms/request | upstream calls/request | errors |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${row.rps.toFixed(0)} | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${(row.rps / ours).toFixed(2)}× | ${(row.rps / rest).toFixed(2)}× | ${percent(row.busy)} | ${row.cpuMsPerRequest.toFixed(3)} | ${row.calls} | ${row.errors} |`,
    );
  }
  console.log(
    `\nUpstream answers that were not 200 during the measured runs: ${storeAfter.notOk - storeBefore.notOk} of ${storeAfter.requests - storeBefore.requests}.`,
  );
  console.log(
    '"server": the process answering the load (REST: the store, on the load core; otherwise the gateway, alone on its core).',
  );
  console.log(
    `Load average (1 min) at start ${loadStart.toFixed(2)}, at end ${loadavg()[0]?.toFixed(2)}: other work on the machine skews results.`,
  );

  // (5) Memory under many connections: peak resident set while 200 connections load each server.
  console.log(`\n| server | RSS idle MB | peak RSS at ${RSS_CONNECTIONS} connections MB | req/s then |`);
  console.log('|---|---:|---:|---:|');
  for (const target of targets) {
    const idle = rssMb(target.pid);
    let peak = idle;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(target.pid));
    }, 100);
    const m = await load(target, RSS_SECONDS, scratch, RSS_CONNECTIONS);
    clearInterval(sampler);
    console.log(`| ${target.name} | ${idle.toFixed(0)} | ${peak.toFixed(0)} | ${m.rps.toFixed(0)} |`);
  }
}

const RSS_CONNECTIONS = 200;
const RSS_SECONDS = 5;

/** Resident set of process `pid`, in MB (/proc/PID/status VmRSS). */
function rssMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

try {
  await main();
} finally {
  await stopAndWait();
}
