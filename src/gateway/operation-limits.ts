/**
 * Limits checked before an operation runs, so a refused one costs no upstream request:
 * graphql-armor's depth, aliases, tokens, directives and generic cost, and our own estimate of the
 * upstream requests an operation will spend, refused above a share of the key's budget. One cheap
 * GraphQL request must not be able to spend a plan's minute.
 */

import { type ApolloServerPlugin, HeaderMap } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { OperationLimits, PetLookup, RateWindow } from '../config.js';
import type { GatewayContext } from './context.js';
import { budgetExceeded } from './errors.js';
import { type LookupStats, planLookup } from './loaders/lookup-plan.js';
import { dryRunBody, isDryRun } from './plugins/dry-run.js';

/** graphql-armor's protections, with the configured limits; its messages name the limit exceeded. */
export function armorProtection(limits: OperationLimits) {
  return new ApolloArmor({
    maxDepth: { n: limits.maxDepth },
    maxAliases: { n: limits.maxAliases },
    // graphql-js's own parser limit instead (server.ts parseOptions): armor's throws from a hook,
    // which Apollo answers with HTTP 500; graphql-js's is a syntax error, answered with 400.
    maxTokens: { enabled: false },
    maxDirectives: { n: limits.maxDirectives },
    costLimit: { maxCost: limits.maxCost },
    // Field suggestions are turned off by Apollo's own plugin in production only.
    blockFieldSuggestion: { enabled: false },
  }).protect();
}

export interface UpstreamEstimateOptions {
  readonly limits: OperationLimits;
  readonly windows: readonly RateWindow[];
  readonly petLookup: PetLookup;
  readonly lookupStats: LookupStats;
  readonly now: () => number;
}

/** The most upstream requests one operation may be estimated to spend, or undefined when throttling is off. */
export function maxUpstreamRequests(limits: OperationLimits, windows: readonly RateWindow[]): number | undefined {
  if (windows.length === 0) return undefined;
  const smallest = Math.min(...windows.map((window) => window.count));
  return Math.max(1, Math.floor(smallest * limits.maxBudgetShare));
}

/**
 * Estimates, before execution, the upstream requests an operation will cost (kept on the
 * operation for `extensions.cost` and `rateLimit.cost`), and refuses one over its share of the
 * key's budget. An operation that asks `rateLimit(dryRun: true)` is answered here with that field
 * alone: nothing else runs and nothing goes upstream, however much it would cost.
 */
export function upstreamEstimatePlugin(options: UpstreamEstimateOptions): ApolloServerPlugin<GatewayContext> {
  const max = maxUpstreamRequests(options.limits, options.windows);
  return {
    async requestDidStart() {
      let dryRun = false;
      return {
        async didResolveOperation({ operation, document, request, contextValue }) {
          if (operation === undefined) return;
          const fragments = new Map<string, FragmentDefinitionNode>();
          for (const definition of document.definitions) {
            if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
          }
          const variables = request.variables ?? {};
          const estimate = estimateUpstreamRequests(operation, fragments, variables, {
            ...options,
            maxRequests: max ?? Number.POSITIVE_INFINITY,
          });
          // No context when a metadata-only request needs no key; there is nothing to price then.
          if (contextValue?.operation) contextValue.operation.estimated = estimate;
          dryRun = isDryRun(operation, fragments, variables);
          if (!dryRun && max !== undefined && estimate > max) throw budgetExceeded(max, { estimated: estimate }, 400);
        },
        async responseForOperation({ operation, document, contextValue }) {
          if (!dryRun) return null;
          return {
            http: { status: undefined, headers: new HeaderMap() },
            body: dryRunBody(operation, document, contextValue),
          };
        },
      };
    },
  };
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
  options: Pick<UpstreamEstimateOptions, 'petLookup' | 'lookupStats' | 'now'> & { readonly maxRequests: number },
): number {
  let requests = 0;
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
        else if (name === 'pet') lookupIds.add(responseKey);
        else if (name === '_entities') {
          const representations = selection.arguments?.find((argument) => argument.name.value === 'representations');
          const count = representations ? listLength(representations.value, variables) : 0;
          for (let i = 0; i < count; i++) lookupIds.add(`${responseKey}.${i}`);
        }
      }
    }
  };
  visit(operation.selectionSet, 0);
  if (lookupIds.size === 0) return requests;
  const plan = planLookup(lookupIds.size, {
    strategy: options.petLookup,
    stats: options.lookupStats,
    now: options.now(),
    maxRequests: options.maxRequests,
  });
  return requests + plan.cost;
}

function listLength(value: ValueNode, variables: Readonly<Record<string, unknown>>): number {
  if (value.kind === Kind.LIST) return value.values.length;
  if (value.kind === Kind.VARIABLE) {
    const list = variables[value.name.value];
    return Array.isArray(list) ? list.length : 1;
  }
  return 1;
}
