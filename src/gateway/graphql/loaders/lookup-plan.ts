/**
 * How a batch of pet lookups is served and what it costs: the one rule both the loader (when it
 * runs the batch) and the estimate before execution use. `list` scans pages of `GET /pets`;
 * `legacy` calls the deprecated `GET /pets/{petId}` once per id, never on or after its sunset.
 */

import type { PetLookup } from '../../../config.js';

/** The deprecated endpoint's removal date (its Sunset header, RFC 8594): never called on or after it. */
export const GET_PET_SUNSET = Date.UTC(2030, 11, 5);

/** What `auto` learns across requests: how many pages the last scan to the end took. */
export interface LookupStats {
  fullScanPages: number | undefined;
}

export interface LookupPlan {
  readonly strategy: 'list' | 'legacy';
  /** Upstream requests the batch is expected to cost. */
  readonly cost: number;
}

export interface PlanOptions {
  readonly strategy: PetLookup;
  readonly stats: LookupStats;
  readonly now: number;
  /** What the operation may spend at most: a scan stops there, so it never costs more. */
  readonly maxRequests: number;
}

export function planLookup(ids: number, options: PlanOptions): LookupPlan {
  // The pages of the last full scan, or one page when none is known yet.
  const scan: LookupPlan = {
    strategy: 'list',
    cost: Math.max(1, Math.min(options.stats.fullScanPages ?? 1, options.maxRequests)),
  };
  if (options.now >= GET_PET_SUNSET || options.strategy === 'list') return scan;
  const legacy: LookupPlan = { strategy: 'legacy', cost: ids };
  if (options.strategy === 'legacy') return legacy;
  return legacy.cost < scan.cost ? legacy : scan;
}
