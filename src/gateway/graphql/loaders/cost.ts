/**
 * What an operation costs upstream, decided in one place: the estimate before execution, the dry
 * run and the pet loader all price with these rules. A `pets` field and a `createPet` cost one
 * request each (a `pets` field asks its page for as many pets as it needs); a batch of pet lookups
 * costs what `planLookup` says: `list` scans pages of `GET /pets`, `legacy` calls the deprecated
 * `GET /pets/{petId}` once per id, never on or after its sunset.
 */

import {
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { OperationLimits, PetLookup, RateWindow } from '../../../config.js';

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

/** The most upstream requests one operation may be estimated to spend, or undefined when throttling is off. */
export function maxUpstreamRequests(limits: OperationLimits, windows: readonly RateWindow[]): number | undefined {
  if (windows.length === 0) return undefined;
  const smallest = Math.min(...windows.map((window) => window.count));
  return Math.max(1, Math.floor(smallest * limits.maxBudgetShare));
}

/**
 * Upstream requests an operation will cost: one page per `pets` field (each alias runs on its
 * own, and asks its page for as many pets as it needs), one per `createPet`, and for all pet
 * lookups together (one batch per request) what `planLookup` says the loader will spend.
 */
export function estimateUpstreamRequests(
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Readonly<Record<string, unknown>>,
  options: {
    readonly petLookup: PetLookup;
    readonly lookupStats: LookupStats;
    readonly now: () => number;
    readonly maxRequests: number;
  },
): number {
  const { requests, lookupIds } = countRootFields(operation, fragments, variables);
  if (lookupIds.size === 0) return requests;
  const plan = planLookup(lookupIds.size, {
    strategy: options.petLookup,
    stats: options.lookupStats,
    now: options.now(),
    maxRequests: options.maxRequests,
  });
  return requests + plan.cost;
}

/**
 * The root fields' pages and creates (`requests`), and the pets they look up (`lookupIds`);
 * `lookups` says whether any root field looks pets up, whatever the variables hold.
 */
export function countRootFields(
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Readonly<Record<string, unknown>>,
): { requests: number; lookupIds: Set<string>; lookups: boolean } {
  let requests = 0;
  let lookups = false;
  const lookupIds = new Set<string>();
  const seen = new Set<string>();
  const visit = (selectionSet: SelectionSetNode, depth: number) => {
    if (depth > 10) return; // fragments that spread each other are refused by validation anyway
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet, depth + 1);
      else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (fragment) visit(fragment.selectionSet, depth + 1);
      } else {
        const responseKey = selection.alias?.value ?? selection.name.value;
        if (seen.has(responseKey)) continue; // same key, merged into one field by GraphQL
        seen.add(responseKey);
        const name = selection.name.value;
        if (name === 'pets' || name === 'createPet') requests++;
        else if (name === 'pet') {
          lookups = true;
          lookupIds.add(responseKey);
        } else if (name === '_entities') {
          lookups = true;
          const representations = selection.arguments?.find((argument) => argument.name.value === 'representations');
          const count = representations ? listLength(representations.value, variables) : 0;
          for (let i = 0; i < count; i++) lookupIds.add(`${responseKey}.${i}`);
        }
      }
    }
  };
  visit(operation.selectionSet, 0);
  return { requests, lookupIds, lookups };
}

function listLength(value: ValueNode, variables: Readonly<Record<string, unknown>>): number {
  if (value.kind === Kind.LIST) return value.values.length;
  if (value.kind === Kind.VARIABLE) {
    const list = variables[value.name.value];
    return Array.isArray(list) ? list.length : 1;
  }
  return 1;
}
