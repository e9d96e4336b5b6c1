/**
 * How the old generation grows under the heap cap `npm start` sets (`--max-old-space-size=256`).
 *
 * V8 lets the old generation grow to its live size times a factor before the next full GC (a
 * mark-compact), and caps that factor by the heap's maximum: 1.3 at 256 MB, rising to 2.0 at
 * 2 GB, and 4.0 from 2 GB on (V8's heap-controller.cc, `MaxGrowingFactor`, with 8-byte tagged
 * values as Node builds them). So the cap that keeps the gateway's memory down also made V8 collect
 * the old generation every ~7 MB promoted: six mark-compacts in 10 s at 2,900 req/s, 8–12 ms
 * each with every request in flight waiting, which was most of the distance between the gateway's
 * p99 and its p50 (README, "The tail and the heap cap"). A factor of 2, what V8 itself allows a
 * 2 GB heap, cuts that to one or two, for 13–19 MB more resident at 200 connections without sharing.
 */

/** The factor V8 allows a 2 GB heap, as `--heap-growing-percent`: (1 + 100/100) = 2. */
const GROWING_PERCENT = 100;
/** From here on V8's own cap on the factor is 4 (`MaxGrowingFactor`): its heuristics are left alone. */
const LARGE_HEAP_BYTES = 2 * 1024 ** 3;

/**
 * The V8 flag to set at start-up, or undefined: none when node was given its own growing factor on
 * the command line (NODE_OPTIONS cannot carry it), nor when the heap is large enough for V8's own.
 * `heapLimitBytes` is `v8.getHeapStatistics().heap_size_limit`.
 */
export function heapGrowingFlag(execArgv: readonly string[], heapLimitBytes: number): string | undefined {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return undefined;
  if (heapLimitBytes >= LARGE_HEAP_BYTES) return undefined;
  return `--heap-growing-percent=${GROWING_PERCENT}`;
}
