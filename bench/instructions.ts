/**
 * `npm run bench:instructions -- [target …]`: the instructions each server executes per request,
 * counted by valgrind's callgrind. req/s and CPU time on this shared 2-core machine move by up to 2×
 * from one minute to the next; an instruction count does not depend on what else the machine is
 * doing, so it compares builds and floors where the timed benches cannot tell them apart.
 *
 * Targets: a build folder of the gateway (`dist`, or another commit's as for `bench:compare`, with
 * Node flags after it in the same quoted argument), `apollo` (the Apollo floor), `floor` (the Node
 * floor) and `tailcall` (Tailcall 1.0.0 without dedupe, when `npm run bench:tailcall:setup` has
 * installed it). Default: dist apollo floor tailcall. The gateway runs sharing off
 * (`PETSTORE_COALESCE=false`): with sharing, how many requests join one execution depends on timing,
 * which valgrind changes.
 *
 * Each target runs alone under `valgrind --tool=callgrind` on core 1, with instrumentation off while
 * it starts and answers BENCH_WARMUP_REQUESTS (5,000) requests, so V8 has compiled the hot code as it
 * would under load; then on, 3,000 more uncounted, and BENCH_WINDOWS (5) windows of BENCH_REQUESTS
 * (2,000) requests are counted, each from a zeroed counter to a dump, with BENCH_CONNECTIONS (32)
 * requests in flight from an HTTP client in this process on core 0. Node targets run with V8's `--predictable` (unless
 * BENCH_PREDICTABLE=false): its collector and compilers then work on the main thread in a fixed
 * order. callgrind counts every thread's instructions either way; without the flag a window's count
 * depends on when a helper thread ran (windows of one run 826k–942k, against 796k–807k with it, in
 * the runs that chose it). The first windows can still carry V8 compiling code the counted load
 * made hot; the median over the windows is the figure. BENCH_WORKLOAD=mix sends the distinct mix of
 * `bench:throughput` instead of the one-call query.
 *
 * Node targets also run with `--perf-basic-prof`, so that V8's compiled functions, which callgrind
 * knows only by address, are named (bench/lib/callgrind.ts): the report gives each Node target's
 * instructions by owner, as `bench:profile` gives its CPU, and the first target's heaviest functions
 * next to the Apollo floor's count for the same function (BENCH_FUNCTIONS, 15).
 *
 * What a count leaves out: the kernel's work (system calls; `strace -c` counted the same per request
 * for the gateway and the Apollo floor) and how fast the instructions run (cache misses, branches),
 * which is where the timed benches see the rest of the difference between targets.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'lossless-json';
import { type Dispatcher, Pool } from 'undici';
import { ownerOf, readCodeMap, readDump } from './lib/callgrind.js';
import { positive } from './lib/load.js';
import { loadWorkload, requestsOf, type WorkloadName } from './lib/mix.js';
import { startTailcall, tailcallVersion } from './lib/peers.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, signalAll, stop, stopAll } from './lib/processes.js';
import { loadAverage, machine, median, table } from './lib/report.js';
import { waitUntilServing } from './lib/runs.js';
import { BENCH_KEY, type Served, startFloorServer, startGateway, startStore } from './lib/servers.js';
import { gatewayTarget, type HttpRequest, type Target, tailcallTarget } from './lib/targets.js';

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['dist', 'apollo', 'floor', 'tailcall'];
const WARMUP = positive('BENCH_WARMUP_REQUESTS', 5000);
const REQUESTS = positive('BENCH_REQUESTS', 2000);
const WINDOWS = positive('BENCH_WINDOWS', 5);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const PREDICTABLE = process.env.BENCH_PREDICTABLE !== 'false';
const FUNCTIONS = positive('BENCH_FUNCTIONS', 15);
const WORKLOAD = ((): WorkloadName => {
  const wanted = process.env.BENCH_WORKLOAD ?? 'one-call';
  if (wanted === 'one-call' || wanted === 'mix') return wanted;
  console.error('BENCH_WORKLOAD: one-call or mix');
  process.exit(2);
})();
/**
 * Requests answered once instrumentation is on, before the first window. Under instrumentation a
 * server runs about 30 times slower, more requests wait at once, and V8 compiles what that makes
 * hot (the gateway went on compiling through three windows of 2,000 with 200 here).
 */
const SETTLE = 3000;

const valgrind = ((): string => {
  try {
    return execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    console.error('bench:instructions needs valgrind (apt-get install -y valgrind)');
    process.exit(2);
  }
})();

/**
 * valgrind names the pipes callgrind_control talks through after the user and host in its
 * environment (LOGNAME or USER, and HOST), and the gateway's HOST is its listening address: the
 * same values for valgrind and for callgrind_control, whatever each target's environment holds.
 */
const CONTROL_ENV = { LOGNAME: 'bench', USER: 'bench', HOST: '127.0.0.1' };

interface Counted {
  /** The target as named on the command line (`dist`, `apollo`, `floor`, `tailcall`), without its flags. */
  readonly name: string;
  readonly label: string;
  /** Instructions per request, one per window. */
  readonly windows: readonly number[];
  /** Instructions per request by owner of the code (Node targets), one map per window. */
  readonly owners: readonly ReadonlyMap<string, number>[];
  /** Each function's own instructions per request over all windows (Node targets), with its owner. */
  readonly functions: ReadonlyMap<string, { readonly owner: string; readonly count: number }>;
  /** Answers that were not a 200 with a clean page. */
  readonly errors: number;
}

pinSelf(LOAD_CORE);
const dir = mkdtempSync(join(tmpdir(), 'petstore-instructions-'));
const VGDB_PREFIX = join(dir, 'vgdb');
/** The Node target running now, whose code map is removed however the bench ends. */
let running: number | undefined;
process.once('SIGINT', () => {
  signalAll();
  rmSync(dir, { recursive: true, force: true });
  if (running !== undefined) rmSync(codeMapOf(running), { force: true });
  process.exit(130);
});
const notes: string[] = [];
const counted: Counted[] = [];
const loadAtStart = loadAverage();
const startedAt = new Date();
try {
  const store = await startStore(LOAD_CORE);
  const workload = await loadWorkload(WORKLOAD, SERVER_CORE, store.url);
  for (const [index, argument] of names.entries()) {
    const [name = '', ...flags] = argument.trim().split(/\s+/);
    const out = join(dir, `callgrind-${index}`);
    const wrapper = [
      'env',
      ...Object.entries(CONTROL_ENV).map(([key, value]) => `${key}=${value}`),
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${out}`,
      // The pipes callgrind_control talks through, in the bench's folder rather than /tmp's.
      `--vgdb-prefix=${VGDB_PREFIX}`,
    ];
    // --perf-basic-prof: Node writes where V8 puts each compiled function, which names it (bench/lib/callgrind.ts).
    const nodeFlags = [...(PREDICTABLE ? ['--predictable'] : []), '--perf-basic-prof', ...flags];
    const started = await startTarget(name, argument, store, wrapper, nodeFlags);
    if (started === undefined) continue;
    const { served, target } = started;
    running = served.pid;
    try {
      // valgrind starts Node about ten times slower than Node starts.
      await waitUntilServing(target, 180_000);
      const requests = requestsOf(workload, target);
      const client = new Pool(target.origin, { connections: CONNECTIONS });
      try {
        const turn = { next: 0 };
        let errors = await send(client, target, requests, turn, WARMUP);
        control(served.pid, '--instr=on');
        errors += await send(client, target, requests, turn, SETTLE);
        control(served.pid, '--zero');
        for (let window = 1; window <= WINDOWS; window++) {
          errors += await send(client, target, requests, turn, REQUESTS);
          control(served.pid, `--dump=window ${window}`);
        }
        await stop(served.child);
        const entry = count(name, target.name, out, name === 'tailcall' ? undefined : served.pid, errors);
        counted.push(entry);
        process.stderr.write(`${argument}: ${entry.windows.map((window) => thousands(window, 0)).join(', ')}\n`);
      } finally {
        await client.close();
      }
    } finally {
      await stop(served.child);
      rmSync(codeMapOf(served.pid), { force: true });
    }
  }
  await stop(store.child);
  console.log(report(workload.description));
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}

/** Starts one target under `wrapper`; undefined (with a note) for a peer that is not installed. */
async function startTarget(
  name: string,
  argument: string,
  store: Served,
  wrapper: readonly string[],
  nodeFlags: readonly string[],
): Promise<{ served: Served; target: Target } | undefined> {
  if (name === 'tailcall') {
    const installed = tailcallVersion(dir);
    if ('skipped' in installed) {
      notes.push(installed.skipped);
      return undefined;
    }
    const peer = await startTailcall(SERVER_CORE, store.url, BENCH_KEY, false, dir, wrapper);
    return { served: peer, target: tailcallTarget(labelOf(name, argument), peer.url, peer.pid, peer.log) };
  }
  if (name === 'apollo' || name === 'floor') {
    const served = await startFloorServer(SERVER_CORE, store.url, name, nodeFlags, wrapper);
    return { served, target: gatewayTarget(labelOf(name, argument), served.url, served.pid, 'id') };
  }
  const served = await startGateway(
    SERVER_CORE,
    store.url,
    { PETSTORE_COALESCE: 'false' },
    nodeFlags,
    join(name, 'main.js'),
    wrapper,
  );
  return { served, target: gatewayTarget(labelOf(name, argument), served.url, served.pid) };
}

function labelOf(name: string, argument: string): string {
  if (name === 'tailcall') return 'Tailcall 1.0.0, no dedupe';
  if (name === 'apollo') return 'Apollo floor';
  if (name === 'floor') return 'Node floor';
  return `this gateway (\`${argument}\`), sharing off`;
}

/**
 * Sends `count` requests, `requests` in turn from where the last call left off, with up to
 * BENCH_CONNECTIONS in flight; returns how many answers were not a 200 with a clean page.
 */
async function send(
  client: Pool,
  target: Target,
  requests: readonly HttpRequest[],
  turn: { next: number },
  count: number,
): Promise<number> {
  let left = count;
  let errors = 0;
  const loop = async (): Promise<void> => {
    while (left > 0) {
      left--;
      const request = requests[turn.next++ % requests.length] as HttpRequest;
      const answer = await sendOnce(client, request);
      const text = await answer.body.text();
      let body: unknown;
      try {
        body = parse(text);
      } catch {}
      if (answer.statusCode !== 200 || target.ids(body) === undefined) errors++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  return errors;
}

/**
 * One request. A server closes a connection idle past its keep-alive timeout, and under valgrind,
 * between phases, that can cross a request the client has just sent on it: a reset before any
 * answer, so the request is sent again (at most three times), on another connection.
 */
async function sendOnce(client: Pool, request: HttpRequest, attempt = 1): Promise<Dispatcher.ResponseData> {
  try {
    return await client.request({
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: request.body ?? null,
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (attempt < 3 && (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET'))
      return sendOnce(client, request, attempt + 1);
    throw error;
  }
}

/** Tells the callgrind in process `pid` what to do (`--instr=on`, `--zero`, `--dump=…`), and waits until it has. */
function control(pid: number, command: string): void {
  execFileSync('callgrind_control', [`--vgdb-prefix=${VGDB_PREFIX}`, command, String(pid)], {
    env: { ...process.env, ...CONTROL_ENV },
    stdio: 'ignore',
  });
}

/** Where Node (V8) writes its map of compiled code for process `pid`, with --perf-basic-prof. */
function codeMapOf(pid: number): string {
  return `/tmp/perf-${pid}.map`;
}

/**
 * Reads a target's dumps (`out.1`, `out.2`, …, in order; the dump at exit is left out) into
 * instructions per request, and for a Node process (`pid`) by owner and by function.
 */
function count(name: string, label: string, out: string, pid: number | undefined, errors: number): Counted {
  const base = out.slice(dir.length + 1);
  const dumps = readdirSync(dir)
    .filter((file) => file.startsWith(`${base}.`) && /^\d+$/.test(file.slice(base.length + 1)))
    .sort((a, b) => Number(a.slice(base.length + 1)) - Number(b.slice(base.length + 1)))
    .map((file) => readDump(readFileSync(join(dir, file), 'utf8'), file));
  if (dumps.length !== WINDOWS) throw new Error(`${label}: ${dumps.length} dumps, not ${WINDOWS}`);
  const windows = dumps.map((dump) => dump.total / REQUESTS);
  if (pid === undefined) return { name, label, windows, owners: [], functions: new Map(), errors };
  const code = existsSync(codeMapOf(pid)) ? readCodeMap(readFileSync(codeMapOf(pid), 'utf8')) : undefined;
  const functions = new Map<string, { owner: string; count: number }>();
  const owners = dumps.map((dump) => {
    const byOwner = new Map<string, number>();
    for (const [fn, { object, count }] of dump.functions) {
      const { owner, label: name } = ownerOf(fn, object, code);
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + count / REQUESTS);
      const known = functions.get(name) ?? { owner, count: 0 };
      functions.set(name, { owner, count: known.count + count / (REQUESTS * WINDOWS) });
    }
    return byOwner;
  });
  return { name, label, windows, owners, functions, errors };
}

function report(description: string): string {
  const tailcall = counted.find((entry) => entry.name === 'tailcall');
  const apollo = counted.find((entry) => entry.name === 'apollo');
  const ratio = (count: number, base: Counted | undefined): string =>
    base === undefined ? '–' : `${(count / median(base.windows)).toFixed(2)}×`;
  const settings = [
    WORKLOAD === 'mix' ? 'BENCH_WORKLOAD=mix ' : '',
    PREDICTABLE ? '' : 'BENCH_PREDICTABLE=false ',
  ].join('');
  return [
    `Command: \`${settings}npm run bench:instructions -- ${names.map((name) => (name.includes(' ') ? `"${name}"` : name)).join(' ')}\` (${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
    '',
    `Machine: ${machine()}, ${valgrind}. Load average (1 / 5 / 15 min): ${loadAtStart} at start, ${loadAverage()} at end; it does not move the counts.`,
    '',
    `Counted: instructions executed by the serving process (all its threads, user space), per request answered, for ${description}; each target alone under callgrind on core ${SERVER_CORE}, ${CONNECTIONS} requests in flight, after ${WARMUP.toLocaleString('en-US')} requests uninstrumented and ${SETTLE.toLocaleString('en-US')} instrumented, uncounted; ${WINDOWS} windows of ${REQUESTS.toLocaleString('en-US')} requests, median.${PREDICTABLE ? ' Node targets with `--predictable`.' : ''}`,
    '',
    table(
      ['target', 'instructions per request', 'each window', 'over Tailcall', 'over the Apollo floor', 'errors'],
      counted.map((entry) => {
        const count = median(entry.windows);
        return [
          entry.label,
          thousands(count, 0),
          entry.windows.map((window) => thousands(window, 0)).join(', '),
          ratio(count, tailcall),
          ratio(count, apollo),
          String(entry.errors),
        ];
      }),
    ),
    ...ownersTable(),
    ...functionsTable(),
    ...(notes.length > 0 ? ['', ...notes] : []),
  ].join('\n');
}

/**
 * The Node targets' instructions per request by owner of the code (as `bench:profile` names
 * owners), each the median over the windows, so that a window with a full GC or a burst of
 * compiling does not set it; and the first target's difference from the Apollo floor.
 */
function ownersTable(): string[] {
  const node = counted.filter((entry) => entry.owners.length > 0);
  const first = node[0];
  if (first === undefined) return [];
  const perOwner = (entry: Counted, owner: string): number =>
    median(entry.owners.map((window) => window.get(owner) ?? 0));
  const apollo = node.find((entry) => entry.name === 'apollo');
  const compared = apollo !== undefined && apollo !== first;
  const owners = [...new Set(node.flatMap((entry) => entry.owners.flatMap((window) => [...window.keys()])))].sort(
    (a, b) => perOwner(first, b) - perOwner(first, a),
  );
  const rows = owners.map((owner) => [
    owner,
    ...node.map((entry) => thousands(perOwner(entry, owner))),
    ...(compared ? [thousands(perOwner(first, owner) - perOwner(apollo, owner))] : []),
  ]);
  return [
    '',
    "By owner of the code, each function's own instructions per request (medians over the windows):",
    '',
    table(
      ['who runs', ...node.map((entry) => entry.label), ...(compared ? ['difference from the Apollo floor'] : [])],
      rows,
    ),
  ];
}

/** The first Node target's heaviest functions by their own instructions, and the same functions on the Apollo floor. */
function functionsTable(): string[] {
  const first = counted.find((entry) => entry.owners.length > 0);
  if (first === undefined) return [];
  const apollo = counted.find((entry) => entry.name === 'apollo');
  const compared = apollo !== undefined && apollo !== first;
  const heaviest = [...first.functions].sort((a, b) => b[1].count - a[1].count).slice(0, FUNCTIONS);
  return [
    '',
    `Heaviest functions of ${first.label}, own instructions per request (all windows):`,
    '',
    table(
      ['function', 'who runs', 'instructions per request', ...(compared ? ['Apollo floor'] : [])],
      heaviest.map(([name, { owner, count }]) => [
        `\`${name.replaceAll('`', "'").replaceAll('|', '\\|')}\``,
        owner,
        thousands(count),
        ...(compared ? [thousands(apollo.functions.get(name)?.count ?? 0)] : []),
      ]),
    ),
  ];
}

/** `829k` (digits 0) or `242.9k`. */
function thousands(count: number, digits = 1): string {
  const options = { minimumFractionDigits: digits, maximumFractionDigits: digits };
  return `${(count / 1000).toLocaleString('en-US', options)}k`;
}
