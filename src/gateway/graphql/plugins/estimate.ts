/**
 * The estimate, checked before an operation runs so a refused one costs no upstream request: the
 * upstream requests it will spend (loaders/cost.ts prices them), refused above a share of the
 * key's budget. One cheap GraphQL request must not be able to spend a plan's minute. The shape
 * limits (depth, aliases, cost in fields) are graphql-armor's (armor.ts).
 */

import { HeaderMap } from '@apollo/server';
import { type DocumentNode, type FragmentDefinitionNode, Kind, type OperationDefinitionNode } from 'graphql';
import type { OperationLimits, PetLookup, RateWindow } from '../../../config.js';
import type { GatewayContext } from '../context.js';
import { budgetExceeded } from '../errors.js';
import { countRootFields, estimateUpstreamRequests, type LookupStats, maxUpstreamRequests } from '../loaders/cost.js';
import { dryRunBody, isDryRun, mayDryRun } from './dry-run.js';
import type { RequestHooks } from './request-hooks.js';

export interface UpstreamEstimateOptions {
  readonly limits: OperationLimits;
  readonly windows: readonly RateWindow[];
  readonly petLookup: PetLookup;
  readonly lookupStats: LookupStats;
  readonly now: () => number;
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
