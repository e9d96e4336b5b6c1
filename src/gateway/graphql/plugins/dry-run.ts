/**
 * `rateLimit(dryRun: true)`: price an operation without running it, as GitHub's GraphQL API
 * does. The answer holds the root `rateLimit` fields only (the others are not executed, so they are
 * absent rather than null, and nothing is sent upstream), and says so in `extensions.dryRun`.
 * Whether an operation is a dry run is read as execution would read it (root-fields.ts).
 */

import type { FormattedExecutionResult } from 'graphql';
import type { GatewayContext } from '../context.js';
import { collectFields, type RootFields } from './root-fields.js';

/** The answer of a dry run: each root `rateLimit` selection, with its own aliases and fields. */
export function dryRunBody(
  root: RootFields,
  context: GatewayContext,
): { kind: 'single'; singleResult: FormattedExecutionResult } {
  const budget = context.budget();
  const values: Record<string, unknown> = {
    __typename: 'RateLimit',
    limit: budget.limit,
    remaining: budget.remaining,
    used: budget.used,
    resetAt: budget.resetAt === undefined ? null : new Date(budget.resetAt).toISOString(),
    cost: context.operation.estimated,
  };
  const data: Record<string, unknown> = {};
  const skipped: string[] = [];
  for (const field of root.fields) {
    if (field.name === '__typename') data[field.responseKey] = 'Query';
    else if (field.name !== 'rateLimit') skipped.push(field.responseKey);
    else {
      const object: Record<string, unknown> = {};
      for (const node of field.nodes) {
        if (node.selectionSet === undefined) continue;
        for (const [key, [sub]] of collectFields(node.selectionSet, 'RateLimit', root.fragments, root.variables)) {
          object[key] = values[sub?.name.value ?? ''] ?? null;
        }
      }
      data[field.responseKey] = object;
    }
  }
  return { kind: 'single', singleResult: { data, extensions: { dryRun: { notExecuted: skipped } } } };
}
