/**
 * Requests the gateway cannot serve, refused before execution with a code the client can act on,
 * rather than failing inside graphql-js or the subgraph library as an internal error:
 * subscriptions (this gateway serves queries and mutations over HTTP), and federation `_entities`
 * representations that are not objects naming a type this subgraph resolves.
 */

import type { BaseContext } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { badUserInput } from '../errors.js';
import type { RequestHooks } from './request-hooks.js';
import { type RootFields, readRootFields } from './root-fields.js';

/** Entity types this subgraph resolves (Category is `resolvable: false`: another subgraph's). */
const RESOLVABLE_ENTITIES = new Set(['Pet']);

export function requestShape<TContext extends BaseContext>(): RequestHooks<TContext> {
  return {
    didResolveOperation({ schema, operation, document, request }) {
      if (operation === undefined) return;
      if (operation.operation === 'subscription') {
        throw new GraphQLError('subscriptions are not supported: this gateway serves queries and mutations over HTTP', {
          extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
        });
      }
      const root = readRootFields(schema, operation, document, request);
      if (root === undefined || checked.has(root)) return;
      // As execution will see them: through fragments, with the variables' defaults, a single
      // representation coerced to a list of one. One that cannot be coerced fails execution anyway.
      for (const field of root.fields) {
        if (field.name === '_entities' && field.args !== undefined) checkRepresentations(field.args.representations);
      }
      if (root.fixed) checked.add(root);
    },
  };
}

/** Readings whose representations passed: a fixed reading (no variables in it) is checked once. */
const checked = new WeakSet<RootFields>();

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
