import { describe, expect, it } from 'vitest';
import { heapGrowingFlag } from '../../src/heap.js';

const MB = 1024 ** 2;

describe('heapGrowingFlag', () => {
  it('gives the heap npm start caps (256 MB of old space) the factor V8 allows a 2 GB heap', () => {
    // Node 20 reports 256 MB of old space plus the young generation as ~304 MB, Node 24 as 448 MB.
    expect(heapGrowingFlag([], 304 * MB)).toBe('--heap-growing-percent=100');
    expect(heapGrowingFlag(['--max-old-space-size=1024'], 1_072 * MB)).toBe('--heap-growing-percent=100');
  });

  it("leaves a heap of 2 GB or more to V8's own factor, which may reach 4 there", () => {
    expect(heapGrowingFlag([], 2_048 * MB)).toBeUndefined();
    expect(heapGrowingFlag([], 4_144 * MB)).toBeUndefined();
  });

  it("keeps a growing factor given on node's command line, in either spelling", () => {
    expect(heapGrowingFlag(['--heap-growing-percent=30'], 304 * MB)).toBeUndefined();
    expect(heapGrowingFlag(['--heap_growing_percent=0'], 304 * MB)).toBeUndefined();
    expect(heapGrowingFlag(['--heap-growing-percent', '50'], 304 * MB)).toBeUndefined();
    // A flag that only starts alike is not the same flag.
    expect(heapGrowingFlag(['--heap-growing-percentage=30'], 304 * MB)).toBe('--heap-growing-percent=100');
  });
});
