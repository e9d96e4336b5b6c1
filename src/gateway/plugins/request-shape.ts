/**
 * Requests the gateway cannot serve, refused before execution with a code the client can act on,
 * rather than failing inside graphql-js or the subgraph library as an internal error:
 * subscriptions (this gateway serves queries and mutations over HTTP), and federation `_entities`
 * representations that are not objects naming a type this subgraph resolves.
 */

import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GraphQLError, Kind, type OperationDefinitionNode, type SelectionSetNode, valueFromASTUntyped } from 'graphql';
import { badUserInput } from '../errors.js';

/** Entity types this subgraph resolves (Category is `resolvable: false`: another subgraph's). */
const RESOLVABLE_ENTITIES = new Set(['Pet']);

export function requestShapePlugin<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request }) {
          if (operation === undefined) return;
          if (operation.operation === 'subscription') {
            throw new GraphQLError(
              'subscriptions are not supported: this gateway serves queries and mutations over HTTP',
              {
                extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
              },
            );
          }
          for (const representations of entitiesArguments(operation, request.variables ?? {})) {
            checkRepresentations(representations);
          }
        },
      };
    },
  };
}

/** The `representations` values of every root `_entities` field of the operation. */
function entitiesArguments(operation: OperationDefinitionNode, variables: Record<string, unknown>): unknown[] {
  const found: unknown[] = [];
  const visit = (selectionSet: SelectionSetNode) => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      if (selection.kind !== Kind.FIELD || selection.name.value !== '_entities') continue;
      const argument = selection.arguments?.find((each) => each.name.value === 'representations');
      if (argument) found.push(valueFromASTUntyped(argument.value, variables));
    }
  };
  visit(operation.selectionSet);
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
