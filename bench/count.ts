/**
 * `npm run bench:count -- A [B …]`: how many machine instructions each build of the gateway runs
 * per request, counted by valgrind's callgrind. Arguments are those of `bench:compare` (a build's
 * folder, optionally with Node flags in the same quoted argument; `apollo` or `floor` for the
 * floors); none: `dist`.
 *
 * Why a count next to `bench:compare`: req/s on this shared 2-core machine moves by a third between
 * runs of one build, so a change worth 2-3% cannot be seen in it. An instruction count depends far
 * less on what else the machine does, though not at all is too much: when the JIT's background
 * compiles land and when the GC runs still shape it (one build moved 1-11% between rounds, the
 * README). Each server runs under
 * callgrind (every thread of it: the JIT, the garbage collector's helpers), is warmed up with
 * BENCH_COUNT_WARMUP requests (1,500, so the optimised code is what gets counted), its counters are
 * zeroed (`callgrind_control -z`), then it answers exactly BENCH_COUNT_REQUESTS (1,000) requests from
 * BENCH_CONNECTIONS (32) clients in this process, and the counters are dumped. What it cannot see:
 * time that is not instructions (cache misses, waits, the system calls' kernel side), so a win here
 * is still checked with `bench:compare` where it should show.
 *
 * Under callgrind a server runs 50-100 times slower: about 3 minutes per build with the defaults.
 * BENCH_ROUNDS (1) repeats each build: take the median of several, and a difference inside their
 * spread as none. BENCH_COALESCE=true runs with coalescing on (default off, as in `bench:compare`);
 * BENCH_WORKLOAD=mix sends the distinct mix.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { positive } from './lib/load.js';
import { loadWorkload } from './lib/mix.js';
import { LOAD_CORE, pinSelf, SERVER_CORE, signalAll, stop, stopAll } from './lib/processes.js';
import { median } from './lib/report.js';
import { type Launcher, startFloorServer, startGateway, startStore } from './lib/servers.js';
import { gatewayTarget, type HttpRequest, send, type Target } from './lib/targets.js';

const builds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['dist'];
const ROUNDS = positive('BENCH_ROUNDS', 1);
const WARMUP = positive('BENCH_COUNT_WARMUP', 1500);
const REQUESTS = positive('BENCH_COUNT_REQUESTS', 1000);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const COALESCE = process.env.BENCH_COALESCE === 'true' ? 'true' : 'false';
const MIX = process.env.BENCH_WORKLOAD === 'mix';

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('bench:count needs valgrind (apt-get install -y valgrind)');
  process.exit(2);
}

/**
 * Sends `count` requests, `CONNECTIONS` at a time, each the next of `requests` in turn, and checks
 * every answer is a clean page: a count of errors is not a count of the work.
 */
async function answerAll(target: Target, requests: readonly HttpRequest[], count: number): Promise<void> {
  let next = 0;
  const client = async (): Promise<void> => {
    for (let index = next++; index < count; index = next++) {
      const answer = await send(target, requests[index % requests.length] as HttpRequest);
      if (answer.status !== 200 || target.ids(answer.body) === undefined) {
        throw new Error(`${target.name} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, client));
}

/**
 * Tells the callgrind of `pid` to zero or dump its counters. vgdb finds the process by the user and
 * the HOST variable in its name, so the command gets the environment the server was started with.
 */
function control(pid: number, command: '-z' | '-d', host: string | undefined): void {
  const env = { ...process.env };
  if (host === undefined) delete env.HOST;
  else env.HOST = host;
  execFileSync('callgrind_control', [command, String(pid)], { env, stdio: 'ignore' });
}

/** Instructions callgrind counted in the dump it wrote last in `dir` (its `totals:` line). */
function dumpedInstructions(dir: string): number {
  const dumps = readdirSync(dir).filter((name) => /\.\d+$/.test(name));
  const last = dumps.sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop())).pop();
  if (last === undefined) throw new Error('callgrind wrote no dump');
  const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(dir, last), 'utf8'));
  if (!totals?.[1]) throw new Error(`no totals in ${last}`);
  return Number(totals[1]);
}

pinSelf(LOAD_CORE);
process.once('SIGINT', () => {
  signalAll();
  process.exit(130);
});
const counts = new Map<string, number[]>(builds.map((build) => [build, []]));
try {
  const store = await startStore(LOAD_CORE);
  const workload = await loadWorkload(MIX, SERVER_CORE, store.url);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const argument of builds) {
      const [build = '', ...flags] = argument.trim().split(/\s+/);
      const dir = mkdtempSync(join(tmpdir(), 'petstore-count-'));
      const launcher: Launcher = [
        'valgrind',
        '-q',
        '--tool=callgrind',
        `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
      ];
      const floor = build === 'apollo' || build === 'floor';
      try {
        const served = floor
          ? await startFloorServer(SERVER_CORE, store.url, build, launcher)
          : await startGateway(
              SERVER_CORE,
              store.url,
              { PETSTORE_COALESCE: COALESCE },
              flags,
              join(build, 'main.js'),
              launcher,
            );
        // startGateway sets HOST for the gateway; a floor has the bench's own environment.
        const host = floor ? process.env.HOST : '127.0.0.1';
        const target = gatewayTarget(argument, served.url, served.pid, floor ? 'id' : 'cursor');
        const requests = workload.pages.map((page) => target.request(page, workload.form));
        await answerAll(target, requests, WARMUP);
        control(served.pid, '-z', host);
        await answerAll(target, requests, REQUESTS);
        control(served.pid, '-d', host);
        const instructions = dumpedInstructions(dir);
        await stop(served.child);
        counts.get(argument)?.push(instructions / REQUESTS);
        console.error(
          `round ${round}: ${argument}: ${(instructions / REQUESTS / 1e6).toFixed(3)} M instructions/request`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  await stop(store.child);
  console.log(
    `Command: \`${workload.setting}BENCH_COALESCE=${COALESCE} BENCH_ROUNDS=${ROUNDS} npm run bench:count -- ${builds.join(' ')}\` (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC), ${workload.description}, ${REQUESTS} requests from ${CONNECTIONS} clients after ${WARMUP} to warm up, each server under valgrind's callgrind\n`,
  );
  const first = median(counts.get(builds[0] as string) ?? []);
  console.log('| build | instructions per request (millions) | against the first | each round |');
  console.log('|---|---:|---:|---|');
  for (const [build, perRequest] of counts) {
    const value = median(perRequest);
    const against =
      build === builds[0] ? '' : `${value >= first ? '+' : ''}${(((value - first) / first) * 100).toFixed(1)}%`;
    console.log(
      `| ${build} | ${(value / 1e6).toFixed(3)} | ${against} | ${perRequest.map((count) => (count / 1e6).toFixed(3)).join(', ')} |`,
    );
  }
} finally {
  await stopAll();
}
