/**
 * What an operation costs upstream, decided in one place: the estimate before execution, the dry
 * run and the pet loader all price with these rules. A `pets` field and a `createPet` cost one
 * request each (a `pets` field asks its page for as many pets as it needs); a batch of pet lookups
 * costs what `planLookup` says: `list` scans pages of `GET /pets`, `legacy` calls the deprecated
 * `GET /pets/{petId}` once per id, never on or after its sunset.
 */

import type { OperationLimits, PetLookup, RateWindow } from '../../../config.js';
// What may be an int64 id (parseInt64's test): anything else is refused before any request.
import { DECIMAL_INTEGER } from '../../../int64.js';

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
  // The pages of the last full scan, or one page when none is known yet: then a scan costs at least that.
  const known = options.stats.fullScanPages !== undefined;
  const scan: LookupPlan = {
    strategy: 'list',
    cost: Math.max(1, Math.min(options.stats.fullScanPages ?? 1, options.maxRequests)),
  };
  if (options.now >= GET_PET_SUNSET || options.strategy === 'list') return scan;
  const legacy: LookupPlan = { strategy: 'legacy', cost: ids };
  if (options.strategy === 'legacy') return legacy;
  // A tie goes to the scan when its length is known (both costs are then sure; it is the endpoint
  // that is not deprecated), and to getPet when it is not: one page is only the least a scan of
  // unknown length costs, and a dry run must not promise less than is spent (the demo's pet with
  // a big id, on the second page, was priced 1 and cost 2).
  return legacy.cost < scan.cost || (legacy.cost === scan.cost && !known) ? legacy : scan;
}

/** The most upstream requests one operation may be estimated to spend, or undefined when throttling is off. */
export function maxUpstreamRequests(limits: OperationLimits, windows: readonly RateWindow[]): number | undefined {
  if (windows.length === 0) return undefined;
  const smallest = Math.min(...windows.map((window) => window.count));
  return Math.max(1, Math.floor(smallest * limits.maxBudgetShare));
}

/** A root field as execution will run it: its name, and its arguments where they are read (root-fields.ts). */
export interface PricedField {
  readonly name: string;
  readonly args: Readonly<Record<string, unknown>> | undefined;
}

/** What an operation's root fields will cost before the lookup plan: pages and creates, and the ids looked up. */
export interface FieldCount {
  readonly requests: number;
  /** Distinct pet ids looked up (by `pet(id:)` and Pet representations of `_entities`), as the loader keys them. */
  readonly lookupIds: ReadonlySet<string>;
}

/**
 * One page per `pets` field (each response key runs on its own, and asks its page for as many pets
 * as it needs), one request per `createPet`, and the distinct ids of every pet lookup: one loader
 * batch serves them all. An id that is not an int64 is refused before any request, so not counted.
 */
export function countRootFields(fields: Iterable<PricedField>): FieldCount {
  let requests = 0;
  const lookupIds = new Set<string>();
  // The loader's key is the id's canonical int64 form; digits as written are kept here (no bigint on
  // a path each request takes), so "07" and "7" count twice: an estimate over, never under.
  const lookUp = (id: unknown) => {
    const digits = typeof id === 'string' ? id.trim() : '';
    if (DECIMAL_INTEGER.test(digits)) lookupIds.add(digits);
  };
  for (const field of fields) {
    if (field.name === 'pets' || field.name === 'createPet') requests++;
    else if (field.name === 'pet') lookUp(field.args?.id);
    else if (field.name === '_entities') {
      const representations = field.args?.representations;
      if (!Array.isArray(representations)) continue;
      for (const representation of representations) {
        if ((representation as { __typename?: unknown } | null)?.__typename === 'Pet') {
          lookUp((representation as { id?: unknown }).id);
        }
      }
    }
  }
  return { requests, lookupIds };
}

/** Upstream requests an operation will cost: its fields' count, and for its lookups what `planLookup` says. */
export function estimateUpstreamRequests(
  count: FieldCount,
  options: {
    readonly petLookup: PetLookup;
    readonly lookupStats: LookupStats;
    readonly now: () => number;
    readonly maxRequests: number;
  },
): number {
  if (count.lookupIds.size === 0) return count.requests;
  const plan = planLookup(count.lookupIds.size, {
    strategy: options.petLookup,
    stats: options.lookupStats,
    now: options.now(),
    maxRequests: options.maxRequests,
  });
  return count.requests + plan.cost;
}
