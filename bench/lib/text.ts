/** What the benches print with: medians and Markdown tables. */

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** A Markdown table; the first column left-aligned, the others (numbers) right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const line = (cells: readonly unknown[]): string => `| ${cells.join(' | ')} |`;
  return [line(headers), `|---|${'---:|'.repeat(headers.length - 1)}`, ...rows.map(line)].join('\n');
}
