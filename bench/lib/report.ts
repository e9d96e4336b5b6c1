/**
 * The Markdown report of `npm run bench:throughput`, written so the README can quote it verbatim:
 * the command, the machine and its load, one table per workload, and the gateway's ratios to
 * Tailcall like for like.
 */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import type { Memory, Row } from './runs.js';
import type { Target } from './targets.js';

/** Row names; the ratios pair them. */
export const ROW = {
  rest: 'REST direct, `GET /v1/pets`',
  tailcallDedupe: 'Tailcall 1.0.0, `dedupe: true` on the `@http` field',
  tailcall: 'Tailcall 1.0.0, no dedupe',
  gateway: 'this gateway, coalescing on (default)',
  gatewayOff: 'this gateway, `PETSTORE_COALESCE=false`',
  floor: 'Node floor: node:http + undici + JSON, no GraphQL (not a gateway)',
  sharingFloor: 'Node floor sharing one GET among identical requests in flight (not a gateway)',
  apolloFloor: 'Apollo floor: the Node floor with Apollo Server 5 and graphql-js, one resolver (not a gateway)',
  mesh: 'Mesh v1 + Hive Gateway 2.15.1',
} as const;

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** A Markdown table; the first column is left-aligned, the others (numbers) right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  const rule = `|---|${headers
    .slice(1)
    .map(() => '---:|')
    .join('')}`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

const fixed = (value: number, digits: number): string => value.toFixed(digits);
const integer = (value: number): string => Math.round(value).toLocaleString('en-US');
export const percent = (share: number): string => `${Math.round(share * 100)}%`;

/** CPU model, cores, memory, kernel and Node, as one line. */
export function machine(): string {
  const model =
    /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown CPU';
  const memory = (totalmem() / 2 ** 30).toFixed(0);
  return `${model.trim()}, ${cpus().length} cores, ${memory} GiB, Linux ${release()}, Node ${process.version}`;
}

/** The 1, 5 and 15 minute load averages. */
export const loadAverage = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');

/** `wrk 4.1.0` or the like, from the tool itself. */
function wrkVersion(): string {
  try {
    execFileSync('wrk', ['-v'], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    // wrk -v prints its banner and exits 1.
    const banner = String((error as { stdout?: unknown }).stdout ?? '');
    const version = /^wrk (?:debian\/)?([\d.]+)/.exec(banner)?.[1];
    if (version) return `wrk ${version}`;
  }
  return 'wrk';
}

export interface Report {
  /** The command and settings that reproduce the run. */
  readonly command: string;
  readonly tool: 'wrk' | 'autocannon';
  readonly connections: number;
  readonly warmupS: number;
  readonly rewarmS: number;
  readonly durationS: number;
  readonly rounds: number;
  readonly cores: { readonly server: string; readonly load: string };
  readonly startedAt: Date;
  readonly loadAtStart: string;
  readonly loadAtEnd: string;
  readonly oneCall: readonly Row[];
  readonly memory: { readonly connections: number; readonly seconds: number; readonly of: ReadonlyMap<Target, Memory> };
  readonly mix: { readonly pages: number; readonly meanSize: number; readonly rows: readonly Row[] } | undefined;
  /** One line each: skipped peers, and what a check found. */
  readonly notes: readonly string[];
}

const COLUMNS = ['req/s', 'p50 ms', 'p99 ms', 'server CPU ms/request', 'server CPU busy', 'upstream calls/request'];

export function formatReport(report: Report): string {
  const tool = report.tool === 'wrk' ? `${wrkVersion()}, one thread, closed loop` : 'autocannon 9, closed loop';
  const { connections, seconds, of: memory } = report.memory;
  const wired = report.oneCall.some((row) => row.wire !== undefined);
  const out: string[] = [
    `Command: \`${report.command}\` (${report.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
    '',
    `Machine: ${machine()}. Load average (1 / 5 / 15 min): ${report.loadAtStart} at start, ${report.loadAtEnd} at end; other work on the machine skews results.`,
    '',
    `Load: ${tool}, ${report.connections} connections; per target ${report.warmupS} s warm-up, then ${report.rounds} × ${report.durationS} s runs interleaved across targets, each right after ${report.rewarmS} s of unmeasured load (a target waits over a minute between its runs, and this gateway, measured alone, answered the first one to two seconds after such a pause at a third of its speed, with p99 50–60 ms), medians. Servers under test pinned to core ${report.cores.server}; the store, the load tool and the bench on core ${report.cores.load}. "server CPU" is the process answering (REST direct: the store); "upstream calls/request" is what the store served during the runs over what the target answered (requests still in flight when a run stops count upstream only, so a target without sharing shows a little over 1). Tailcall runs with its defaults but for loopback, one worker and a 32-connection idle pool: JIT execution, no query validation, no HTTP cache.${wired ? ` "On the wire" (BENCH_WIRE=true): tcpdump, on core ${report.cores.load} during every measured run, pairs each request packet on loopback with the next answer packet on its connection: the time as the server delivers it, without the load tool's own.` : ''}`,
    '',
    `**One call**: the same page of 20 pets every time (\`GET /v1/pets?limit=20\`; this gateway \`{ pets(first: 20) { nodes { id name status } } }\`; Tailcall \`{ pets(limit: 20) { id name status } }\`; Mesh \`{ listPets(limit: 20) { ... on Pet { id name status } } }\`); memory while ${connections} connections send it for ${seconds} s:`,
    '',
    table(
      [
        'target',
        ...COLUMNS,
        ...wireColumns(wired),
        'RSS idle MB',
        `peak RSS at ${connections} connections MB`,
        'errors',
      ],
      report.oneCall.map((row) => {
        const { idle, peak } = memory.get(row.target) ?? { idle: 0, peak: 0 };
        return [...cells(row), ...wireCells(row, wired), fixed(idle, 0), fixed(peak, 0), String(row.errors)];
      }),
    ),
  ];
  if (report.mix !== undefined) {
    out.push(
      '',
      `**Distinct mix**: ${integer(report.mix.pages)} different pages in turn (sizes 1–100, no filter or one of three statuses, first pages and cursors; ${fixed(report.mix.meanSize, 1)} pets per page on average), so no two requests in flight are alike; GraphQL targets get one document per shape of page, with variables, as a client would send it:`,
      '',
      table(
        ['target', ...COLUMNS, ...wireColumns(wired), 'errors'],
        report.mix.rows.map((row) => [...cells(row), ...wireCells(row, wired), String(row.errors)]),
      ),
    );
  }
  const ratios = ratioLines(report);
  if (ratios.length > 0) out.push('', ...ratios);
  if (report.notes.length > 0) out.push('', ...report.notes.map((note) => `- ${note}`));
  return out.join('\n');
}

/** With BENCH_WIRE, p50 and p99 as the server's packets show them (bench/lib/wire.ts). */
const wireColumns = (wired: boolean): string[] => (wired ? ['p50 ms on the wire', 'p99 ms on the wire'] : []);
const wireCells = (row: Row, wired: boolean): string[] =>
  wired ? [fixed(row.wire?.p50 ?? Number.NaN, 2), fixed(row.wire?.p99 ?? Number.NaN, 2)] : [];

function cells(row: Row): string[] {
  return [
    row.target.name,
    integer(row.rps),
    fixed(row.p50, 2),
    fixed(row.p99, 2),
    fixed(row.cpuMsPerRequest, 3),
    percent(row.busy),
    fixed(row.upstreamPerRequest, 2),
  ];
}

/** The gateway's req/s against Tailcall's, like for like, and its tail and memory. */
function ratioLines(report: Report): string[] {
  const find = (rows: readonly Row[] | undefined, name: string): Row | undefined =>
    rows?.find((row) => row.target.name === name);
  const share = (rows: readonly Row[] | undefined, ours: string, theirs: string): string => {
    const a = find(rows, ours);
    const b = find(rows, theirs);
    return a === undefined || b === undefined ? 'n/a' : percent(a.rps / b.rps);
  };
  const lines: string[] = [];
  const mix = report.mix?.rows;
  if (find(report.oneCall, ROW.tailcall) !== undefined) {
    lines.push(
      `- this gateway's req/s as a share of Tailcall's, sharing off on both sides: one call ${share(report.oneCall, ROW.gatewayOff, ROW.tailcall)}, distinct mix ${share(mix, ROW.gatewayOff, ROW.tailcall)}`,
      `- the same with sharing on on both sides (coalescing, \`dedupe: true\`): one call ${share(report.oneCall, ROW.gateway, ROW.tailcallDedupe)}, distinct mix ${share(mix, ROW.gateway, ROW.tailcallDedupe)}`,
    );
  }
  /** One ratio on the one-call query, and on the mix when the mix ran. */
  const both = (ours: string, theirs: string): string =>
    mix === undefined
      ? share(report.oneCall, ours, theirs)
      : `${share(report.oneCall, ours, theirs)} (mix ${share(mix, ours, theirs)})`;
  if (find(report.oneCall, ROW.floor) !== undefined) {
    lines.push(
      `- the Node floor (no GraphQL at all) as a share of Tailcall without dedupe: ${both(ROW.floor, ROW.tailcall)}; this gateway without sharing as a share of the floor: ${both(ROW.gatewayOff, ROW.floor)}`,
    );
  }
  if (find(report.oneCall, ROW.apolloFloor) !== undefined) {
    lines.push(
      `- the Apollo floor (Apollo Server and graphql-js, nothing of the gateway's) as a share of Tailcall without dedupe: ${both(ROW.apolloFloor, ROW.tailcall)}, of the Node floor: ${both(ROW.apolloFloor, ROW.floor)}; this gateway without sharing as a share of the Apollo floor: ${both(ROW.gatewayOff, ROW.apolloFloor)}`,
    );
  }
  /** p99 / p50 as wrk measured it, and on the wire when captured. */
  const ratio = (name: string): string => {
    const row = find(report.oneCall, name);
    if (row === undefined) return 'n/a';
    const wire = row.wire ? ` (on the wire ${fixed(row.wire.p99 / row.wire.p50, 1)}×)` : '';
    return `${fixed(row.p99 / row.p50, 1)}×${wire}`;
  };
  if (find(report.oneCall, ROW.sharingFloor) !== undefined) {
    lines.push(
      `- p99 / p50 with sharing (one call): this gateway ${ratio(ROW.gateway)}, the Node floor sharing one GET ${ratio(ROW.sharingFloor)}, Tailcall with dedupe ${ratio(ROW.tailcallDedupe)}`,
    );
  }
  for (const name of [ROW.gateway, ROW.gatewayOff]) {
    const row = find(report.oneCall, name);
    if (row === undefined) continue;
    const peak = report.memory.of.get(row.target)?.peak ?? 0;
    lines.push(
      `- ${name}: p99 / p50 ${ratio(name)} at ${report.connections} connections (one call); peak RSS ${fixed(peak, 0)} MB at ${report.memory.connections}`,
    );
  }
  return lines;
}
