/**
 * The Markdown report of `npm run bench:throughput`, printed so docs/benchmarks.md can quote it
 * verbatim: the command, the machine and its load, one table per workload, and the ratios.
 */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import type { Target } from './targets.js';

/** Row names; the ratios pair them. */
export const ROW = {
  rest: 'REST direct, `GET /v1/pets`',
  tailcallDedupe: 'Tailcall 1.0.0, `dedupe: true`',
  tailcall: 'Tailcall 1.0.0, no dedupe',
  gateway: 'this gateway, coalescing on (default)',
  gatewayOff: 'this gateway, `PETSTORE_COALESCE=false`',
  mesh: 'Mesh v1 + Hive Gateway 2.15.1',
} as const;

/** Medians over a target's measured runs. */
export interface Row {
  readonly target: Target;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuMsPerRequest: number;
  /** Requests the store served during the runs over the requests the target answered. */
  readonly upstreamPerRequest: number;
  readonly errors: number;
  /** Resident set (MB) before and at the peak of the memory phase (one call only). */
  readonly rss?: { readonly idle: number; readonly peak: number };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** A Markdown table; the first column left-aligned, the others (numbers) right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(headers), `|---|${'---:|'.repeat(headers.length - 1)}`, ...rows.map(line)].join('\n');
}

export const percent = (share: number): string => `${Math.round(share * 100)}%`;
const integer = (value: number): string => Math.round(value).toLocaleString('en-US');

/** CPU model, cores, memory, kernel and Node, as one line. */
export function machine(): string {
  const model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model;
  const memory = (totalmem() / 2 ** 30).toFixed(0);
  return `${model?.trim() ?? 'unknown CPU'}, ${cpus().length} cores, ${memory} GiB, Linux ${release()}, Node ${process.version}`;
}

export const loadAverage = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');

/** `wrk 4.1.0`: wrk -v prints its banner and exits 1. */
function wrkVersion(): string {
  try {
    execFileSync('wrk', ['-v'], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const banner = String((error as { stdout?: unknown }).stdout ?? '');
    return `wrk ${/^wrk (?:debian\/)?([\d.]+)/.exec(banner)?.[1] ?? ''}`.trim();
  }
  return 'wrk';
}

export interface Report {
  readonly command: string;
  readonly method: string;
  readonly loadAtStart: string;
  readonly oneCall: readonly Row[];
  readonly rssConnections: number;
  readonly mix?: { readonly pages: number; readonly meanSize: number; readonly rows: readonly Row[] } | undefined;
  readonly notes: readonly string[];
}

const COLUMNS = ['req/s', 'p50 ms', 'p99 ms', 'server CPU ms/request', 'upstream calls/request'];
const cells = (row: Row): string[] => [
  row.target.name,
  integer(row.rps),
  row.p50.toFixed(2),
  row.p99.toFixed(2),
  row.cpuMsPerRequest.toFixed(3),
  row.upstreamPerRequest.toFixed(2),
];

export function formatReport(report: Report): string {
  const rss = `peak RSS MB at ${report.rssConnections} connections`;
  const out = [
    `Command: \`${report.command}\``,
    '',
    `Machine: ${machine()}. Load average (1 / 5 / 15 min) ${report.loadAtStart} at start, ${loadAverage()} at end.`,
    '',
    `Load: ${wrkVersion()}, ${report.method}`,
    '',
    '**One call**: the same page of 20 pets every time:',
    '',
    table(
      ['target', ...COLUMNS, 'RSS idle MB', rss, 'errors'],
      report.oneCall.map((row) => [
        ...cells(row),
        (row.rss?.idle ?? 0).toFixed(0),
        (row.rss?.peak ?? 0).toFixed(0),
        String(row.errors),
      ]),
    ),
  ];
  if (report.mix !== undefined) {
    out.push(
      '',
      `**Distinct mix**: ${integer(report.mix.pages)} different pages in turn (sizes 1–100, no filter or one of three statuses, first pages and cursors; ${report.mix.meanSize.toFixed(1)} pets per page on average), GraphQL with variables:`,
      '',
      table(
        ['target', ...COLUMNS, 'errors'],
        report.mix.rows.map((row) => [...cells(row), String(row.errors)]),
      ),
    );
  }
  const share = (rows: readonly Row[] | undefined, ours: string, theirs: string): string => {
    const a = rows?.find((row) => row.target.name === ours);
    const b = rows?.find((row) => row.target.name === theirs);
    return a === undefined || b === undefined ? 'n/a' : percent(a.rps / b.rps);
  };
  const both = (ours: string, theirs: string): string =>
    `one call ${share(report.oneCall, ours, theirs)}, distinct mix ${share(report.mix?.rows, ours, theirs)}`;
  out.push(
    '',
    `- this gateway's req/s as a share of Tailcall's, sharing off on both sides: ${both(ROW.gatewayOff, ROW.tailcall)}`,
    `- the same, sharing on on both sides: ${both(ROW.gateway, ROW.tailcallDedupe)}`,
    `- this gateway's req/s as a share of Mesh's: ${both(ROW.gateway, ROW.mesh)}`,
    `- this gateway's req/s as a share of REST direct: ${both(ROW.gateway, ROW.rest)}`,
    ...report.notes.map((note) => `- ${note}`),
  );
  return out.join('\n');
}
