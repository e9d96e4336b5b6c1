/** Markdown output of `npm run bench:throughput`: tables, the machine, and medians. */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';

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

export const fixed = (value: number, digits: number): string => value.toFixed(digits);
export const integer = (value: number): string => Math.round(value).toLocaleString('en-US');
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
export function wrkVersion(): string {
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
