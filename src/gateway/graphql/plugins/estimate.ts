/**
 * The estimate, checked before an operation runs so a refused one costs no upstream request: the
 * upstream requests it will spend (loaders/cost.ts prices them), refused above a share of the
 * key's budget. One cheap GraphQL request must not be able to spend a plan's minute. The shape
 * limits (depth, aliases, cost in fields) are graphql-armor's (armor.ts).
 */

import { HeaderMap } from '@apollo/server';
import type { OperationDefinitionNode } from 'graphql';
import type { OperationLimits, PetLookup, RateWindow } from '../../../config.js';
import type { GatewayContext } from '../context.js';
import { budgetExceeded } from '../errors.js';
import {
  countRootFields,
  estimateUpstreamRequests,
  type FieldCount,
  type LookupStats,
  maxUpstreamRequests,
} from '../loaders/cost.js';
import { dryRunBody } from './dry-run.js';
import type { RequestHooks } from './request-hooks.js';
import { type RootFields, readRootFields } from './root-fields.js';

export interface UpstreamEstimateOptions {
  readonly limits: OperationLimits;
  readonly windows: readonly RateWindow[];
  readonly petLookup: PetLookup;
  readonly lookupStats: LookupStats;
  readonly now: () => number;
}

/** What the estimate takes from a reading of the root fields: kept with it, so a fixed reading is priced once. */
interface Priced extends FieldCount {
  /** A root `rateLimit` field that execution would run asks `dryRun: true`. */
  readonly dryRun: boolean;
}

const pricedReadings = new WeakMap<RootFields, Priced>();

function priced(root: RootFields): Priced {
  let found = root.fixed ? pricedReadings.get(root) : undefined;
  if (found === undefined) {
    const { requests, lookupIds } = countRootFields(root.fields);
    const dryRun = root.fields.some((field) => field.name === 'rateLimit' && field.args?.dryRun === true);
    found = { requests, lookupIds, dryRun };
    if (root.fixed) pricedReadings.set(root, found);
  }
  return found;
}

/**
 * Estimates, before execution, the upstream requests an operation will cost (kept on the
 * operation for `extensions.cost` and `rateLimit.cost`), and refuses one over its share of the
 * key's budget. An operation that asks `rateLimit(dryRun: true)` is answered here with that field
 * alone: nothing else runs and nothing goes upstream, however much it would cost. Both read the
 * root fields as execution will (root-fields.ts): variables' defaults, fragments, @skip/@include.
 */
export function upstreamEstimate(options: UpstreamEstimateOptions): RequestHooks<GatewayContext> {
  const max = maxUpstreamRequests(options.limits, options.windows);
  const estimateOptions = { ...options, maxRequests: max ?? Number.POSITIVE_INFINITY };
  return {
    didResolveOperation({ schema, operation, document, request, contextValue }) {
      if (operation === undefined) return;
      const root = readRootFields(schema, operation, document, request);
      if (root === undefined) return;
      const price = priced(root);
      const estimate = estimateUpstreamRequests(price, estimateOptions);
      // No context when a metadata-only request needs no key; there is nothing to price then.
      if (contextValue?.operation) contextValue.operation.estimated = estimate;
      if (max !== undefined && estimate > max && !price.dryRun) {
        throw budgetExceeded(max, { estimated: estimate }, 400);
      }
    },
    responseForOperation({ schema, operation, document, request, contextValue }) {
      // Apollo Server asks even when operationName names no operation of the document (it answers
      // 400 after this), whatever its types say.
      if ((operation as OperationDefinitionNode | undefined) === undefined) return null;
      const root = readRootFields(schema, operation, document, request);
      if (root === undefined || !priced(root).dryRun) return null;
      return {
        http: { status: undefined, headers: new HeaderMap() },
        body: dryRunBody(root, contextValue),
      };
    },
  };
}
