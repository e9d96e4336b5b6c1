/**
 * `rateLimit(dryRun: true)`: price an operation without running it, as GitHub's GraphQL API
 * does. The answer holds the root `rateLimit` fields only (the others are not executed, so they are
 * absent rather than null, and nothing is sent upstream), and says so in `extensions.dryRun`.
 */

import {
  type DocumentNode,
  type FormattedExecutionResult,
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  valueFromASTUntyped,
} from 'graphql';
import type { GatewayContext } from '../context.js';

/** Whether a root `rateLimit` field of the operation asks for a dry run. */
export function isDryRun(
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Readonly<Record<string, unknown>>,
): boolean {
  return rootFields(operation.selectionSet, fragments).some(
    (field) =>
      field.name.value === 'rateLimit' &&
      field.arguments?.some(
        (argument) => argument.name.value === 'dryRun' && valueFromASTUntyped(argument.value, variables) === true,
      ),
  );
}

/** Whether a root `rateLimit` field of the operation takes a `dryRun` argument at all, whatever its value. */
export function mayDryRun(
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): boolean {
  return rootFields(operation.selectionSet, fragments).some(
    (field) =>
      field.name.value === 'rateLimit' && field.arguments?.some((argument) => argument.name.value === 'dryRun'),
  );
}

type FieldNode = Extract<SelectionSetNode['selections'][number], { kind: Kind.FIELD }>;

/** The fields of a selection set, through inline fragments and fragment spreads. */
function rootFields(
  selectionSet: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): FieldNode[] {
  const fields: FieldNode[] = [];
  const visit = (set: SelectionSetNode, depth: number) => {
    if (depth > 10) return;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) fields.push(selection);
      else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet, depth + 1);
      else {
        const fragment = fragments.get(selection.name.value);
        if (fragment) visit(fragment.selectionSet, depth + 1);
      }
    }
  };
  visit(selectionSet, 0);
  return fields;
}

/** The answer of a dry run: each root `rateLimit` selection, with its own aliases and fields. */
export function dryRunBody(
  operation: OperationDefinitionNode,
  document: DocumentNode,
  context: GatewayContext,
): { kind: 'single'; singleResult: FormattedExecutionResult } {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
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
  for (const field of rootFields(operation.selectionSet, fragments)) {
    const key = field.alias?.value ?? field.name.value;
    if (field.name.value === '__typename') data[key] = 'Query';
    else if (field.name.value !== 'rateLimit') skipped.push(key);
    else if (field.selectionSet) {
      const object: Record<string, unknown> = {};
      for (const sub of rootFields(field.selectionSet, fragments)) {
        object[sub.alias?.value ?? sub.name.value] = values[sub.name.value] ?? null;
      }
      data[key] = object;
    }
  }
  return { kind: 'single', singleResult: { data, extensions: { dryRun: { notExecuted: skipped } } } };
}
