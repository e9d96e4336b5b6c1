/**
 * Requests the gateway cannot serve, refused before execution with a code the client can act on,
 * rather than failing inside graphql-js or the subgraph library as an internal error:
 * subscriptions (this gateway serves queries and mutations over HTTP), and federation `_entities`
 * representations that are not objects naming a type this subgraph resolves.
 */

import type { BaseContext } from '@apollo/server';
import { GraphQLError, Kind, type OperationDefinitionNode, type SelectionSetNode, valueFromASTUntyped } from 'graphql';
import { badUserInput } from '../errors.js';
import type { RequestHooks } from './request-hooks.js';

/** Entity types this subgraph resolves (Category is `resolvable: false`: another subgraph's). */
const RESOLVABLE_ENTITIES = new Set(['Pet']);

export function requestShape<TContext extends BaseContext>(): RequestHooks<TContext> {
  return {
    didResolveOperation({ operation, request }) {
      if (operation === undefined) return;
      if (operation.operation === 'subscription') {
        throw new GraphQLError('subscriptions are not supported: this gateway serves queries and mutations over HTTP', {
          extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
        });
      }
      const entities = entitiesArguments(operation);
      if (entities.length === 0) return;
      const variables = request.variables ?? {};
      for (const argument of entities) checkRepresentations(valueFromASTUntyped(argument, variables));
    },
  };
}

type ValueNode = Parameters<typeof valueFromASTUntyped>[0];

/**
 * The `representations` arguments of every root `_entities` field of the operation, found once per
 * parsed operation: Apollo Server keeps parsed documents, so a repeated query brings the same node.
 */
const entitiesOf = new WeakMap<OperationDefinitionNode, readonly ValueNode[]>();

function entitiesArguments(operation: OperationDefinitionNode): readonly ValueNode[] {
  let found = entitiesOf.get(operation);
  if (found !== undefined) return found;
  const values: ValueNode[] = [];
  const visit = (selectionSet: SelectionSetNode) => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      if (selection.kind !== Kind.FIELD || selection.name.value !== '_entities') continue;
      const argument = selection.arguments?.find((each) => each.name.value === 'representations');
      if (argument) values.push(argument.value);
    }
  };
  visit(operation.selectionSet);
  found = values;
  entitiesOf.set(operation, found);
  return found;
}

function checkRepresentations(value: unknown): void {
  if (!Array.isArray(value)) throw badUserInput('representations must be a list of objects', undefined, 400);
  value.forEach((representation, i) => {
    if (typeof representation !== 'object' || representation === null || Array.isArray(representation)) {
      throw badUserInput(`representations[${i}] must be an object with __typename and its key fields`, undefined, 400);
    }
    const typename = (representation as Record<string, unknown>).__typename;
    if (typeof typename !== 'string' || !RESOLVABLE_ENTITIES.has(typename)) {
      throw badUserInput(
        `representations[${i}].__typename must name an entity this subgraph resolves: ${[...RESOLVABLE_ENTITIES].join(', ')}`,
        undefined,
        400,
      );
    }
  });
}
