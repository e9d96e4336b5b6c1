/**
 * Limits checked before an operation runs, so a refused one costs no upstream request:
 * graphql-armor's depth, aliases, tokens, directives and generic cost, and our own estimate of the
 * upstream requests an operation will spend, refused above a share of the key's budget. One cheap
 * GraphQL request must not be able to spend a plan's minute.
 */

import { HeaderMap } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { OperationLimits, PetLookup, RateWindow } from '../../../config.js';
import type { GatewayContext } from '../context.js';
import { budgetExceeded } from '../errors.js';
import { type LookupStats, planLookup } from '../loaders/lookup-plan.js';
import { dryRunBody, isDryRun, mayDryRun } from './dry-run.js';
import type { RequestHooks } from './request-hooks.js';

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
export function upstreamEstimate(options: UpstreamEstimateOptions): RequestHooks<GatewayContext> {
  const max = maxUpstreamRequests(options.limits, options.windows);
  const estimateOptions = { ...options, maxRequests: max ?? Number.POSITIVE_INFINITY };
  return {
    didResolveOperation({ operation, document, request, contextValue }) {
      if (operation === undefined) return;
      const facts = factsOf(operation, document);
      const variables = request.variables ?? {};
      const estimate =
        facts.estimate ?? estimateUpstreamRequests(operation, facts.fragments, variables, estimateOptions);
      // No context when a metadata-only request needs no key; there is nothing to price then.
      if (contextValue?.operation) contextValue.operation.estimated = estimate;
      if (max !== undefined && estimate > max && !dryRun(operation, facts, variables)) {
        throw budgetExceeded(max, { estimated: estimate }, 400);
      }
    },
    responseForOperation({ operation, document, request, contextValue }) {
      // Apollo Server asks even when operationName names no operation of the document (it answers
      // 400 after this), whatever its types say.
      if ((operation as OperationDefinitionNode | undefined) === undefined) return null;
      const facts = factsOf(operation, document);
      if (!dryRun(operation, facts, request.variables ?? {})) return null;
      return {
        http: { status: undefined, headers: new HeaderMap() },
        body: dryRunBody(operation, document, contextValue),
      };
    },
  };
}

/**
 * What an operation's text alone decides, worked out once per parsed operation: Apollo Server keeps
 * parsed documents, so a repeated query brings the same operation node (and document) again.
 */
interface OperationFacts {
  readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  /** The estimate when the text alone decides it (no pet lookups), else undefined. */
  readonly estimate: number | undefined;
  /** Whether a root `rateLimit` field takes a `dryRun` argument (a variable's value decides then). */
  readonly asksDryRun: boolean;
}

const factsByOperation = new WeakMap<OperationDefinitionNode, OperationFacts>();

function factsOf(operation: OperationDefinitionNode, document: DocumentNode): OperationFacts {
  let facts = factsByOperation.get(operation);
  if (facts !== undefined) return facts;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const counted = countRootFields(operation, fragments, {});
  facts = {
    fragments,
    estimate: counted.lookups ? undefined : counted.requests,
    asksDryRun: mayDryRun(operation, fragments),
  };
  factsByOperation.set(operation, facts);
  return facts;
}

function dryRun(
  operation: OperationDefinitionNode,
  facts: OperationFacts,
  variables: Readonly<Record<string, unknown>>,
): boolean {
  return facts.asksDryRun && isDryRun(operation, facts.fragments, variables);
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
function countRootFields(
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
