/**
 * `npm run test:stress`: the whole suite, RUNS times in a row on the machine's Node and RUNS times on
 * Node 24, each run with a busy loop holding one core for its whole length (a loaded 2-core CI
 * machine). Prints, per run: exit code, vitest's summary line, duration, and the processes the run
 * left behind (anything carrying the run's marker, see test/helpers/processes.ts, plus any
 * redis-server in a petstore-redis-* folder). Exits 1 unless every run passed and left nothing.
 *
 * Settings: STRESS_RUNS (5 per Node version), STRESS_NODES (`current,24`).
 */

import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readlink, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findTracked, stopProcess, TEST_RUN_ENV } from './helpers/processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.STRESS_RUNS ?? 5);
const NODES = (process.env.STRESS_NODES ?? 'current,24').split(',');

interface RunResult {
  readonly node: string;
  readonly exit: number | null;
  readonly summary: string;
  readonly seconds: number;
  readonly leftBehind: string[];
}

/** The folder of the Node binary to put first on PATH ('' for the machine's own). */
function nodeBin(version: string): string {
  if (version === 'current') return '';
  if (version !== '24') throw new Error(`STRESS_NODES: current or 24, not ${version}`);
  return execFileSync('.ci/node24', { cwd: ROOT, encoding: 'utf8' }).trim();
}

async function strayRedis(): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    const exe = await readlink(`/proc/${entry}/exe`).catch(() => '');
    if (cwd.includes('petstore-redis-') && exe.endsWith('redis-server')) found.push(`${entry} redis-server in ${cwd}`);
  }
  return found;
}

/** The run in progress, so an interrupted stress run stops everything it started. */
let current: { run: string; busy: number | undefined } | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void (async () => {
      if (current !== undefined) {
        const { run, busy } = current;
        if (busy !== undefined) await stopProcess(busy, 'SIGKILL').catch(() => {});
        for (const { pid } of await findTracked(run, new Set([process.pid]))) {
          await stopProcess(pid, 'SIGKILL').catch(() => {});
        }
      }
      process.exit(130);
    })();
  });
}

async function runOnce(node: string, bin: string): Promise<RunResult> {
  const run = randomUUID();
  const env = { ...process.env, [TEST_RUN_ENV]: run, PATH: bin ? `${bin}:${process.env.PATH}` : process.env.PATH };
  // The busy core: a separate process, so it competes with the suite as another job on CI would.
  const busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  current = { run, busy: busy.pid };
  const started = performance.now();
  let output = '';
  const exit = await new Promise<number | null>((resolve) => {
    const child = spawn('npm', ['test'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('exit', (code) => resolve(code));
  });
  const seconds = (performance.now() - started) / 1000;
  if (busy.pid !== undefined) await stopProcess(busy.pid, 'SIGKILL');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest colours its summary
  const plain = output.replace(/\u001b\[[0-9;]*m/g, '');
  // Its parts are separated by "|", which would split the table's cell.
  const summary = /^\s*Tests\s+(.*)$/m.exec(plain)?.[1]?.trim().replaceAll(' | ', ', ') ?? '(no summary line)';
  if (exit !== 0) {
    // The whole output of a failed run, for reading; the table keeps one line per run.
    const log = join(tmpdir(), `petstore-stress-${run}.log`);
    await writeFile(log, plain);
    const failed = plain.match(/^ FAIL .*$/gm) ?? [];
    process.stdout.write(`${[...new Set(failed)].join('\n')}\n(full output: ${log})\n`);
  }
  const tracked = await findTracked(run, new Set([process.pid]));
  const leftBehind = [...tracked.map(({ pid, command }) => `${pid} ${command}`), ...(await strayRedis())];
  for (const { pid } of tracked) await stopProcess(pid, 'SIGKILL').catch(() => {});
  return { node, exit, summary, seconds, leftBehind };
}

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}`;
console.log(`npm run test:stress: ${RUNS} runs of npm test per Node version, one core kept busy; ${machine}`);
console.log('| # | node | exit | tests | seconds | left behind | load (1 min) |');
console.log('|---|---|---:|---|---:|---|---:|');
const results: RunResult[] = [];
for (const version of NODES) {
  const bin = nodeBin(version);
  const label = execFileSync(bin ? `${bin}/node` : process.execPath, ['--version'], { encoding: 'utf8' }).trim();
  for (let i = 0; i < RUNS; i++) {
    const result = await runOnce(label, bin);
    results.push(result);
    const left = result.leftBehind.length === 0 ? '0' : result.leftBehind.join('; ');
    console.log(
      `| ${results.length} | ${label} | ${result.exit} | ${result.summary} | ${result.seconds.toFixed(0)} | ${left} | ${loadavg()[0]?.toFixed(2)} |`,
    );
  }
}
const passed = results.filter((r) => r.exit === 0 && r.leftBehind.length === 0).length;
console.log(`\n${passed}/${results.length} runs exited 0 and left nothing running`);
process.exit(passed === results.length ? 0 : 1);
