import { readFileSync } from 'node:fs';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { type OperationDefinitionNode, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { readRootFields } from '../../../../src/gateway/graphql/plugins/root-fields.js';

const schema = buildSubgraphSchema([
  { typeDefs: parse(readFileSync(new URL('../../../../schema/petstore.graphql', import.meta.url), 'utf8')) },
]);

function read(query: string, variables?: Record<string, unknown>) {
  const document = parse(query);
  const operation = document.definitions.find((d) => d.kind === 'OperationDefinition') as OperationDefinitionNode;
  return {
    document,
    operation,
    read: (vars = variables) => readRootFields(schema, operation, document, { variables: vars }),
  };
}

const summary = (root: ReturnType<typeof readRootFields>) =>
  root?.fields.map((field) => [field.responseKey, field.name, field.args ?? null]);

describe('readRootFields', () => {
  it('reads an operation no variable can change once, and gives every request the same reading', () => {
    const { read: again } = read(
      'query ($after: String) { pets(first: 2, after: $after) { nodes { id } } a: pet(id: " 7") { id } }',
    );
    const first = again({ after: 'x' });
    expect(again({ after: 'y' })).toBe(first);
    expect(first?.fixed).toBe(true);
    expect(summary(first)).toEqual([
      ['pets', 'pets', null],
      ['a', 'pet', { id: ' 7' }],
    ]);
  });

  it("reads variables with their defaults, and again for each request's variables", () => {
    const { read: dryRunOf } = read('query ($d: Boolean = true) { rateLimit(dryRun: $d) { cost } }');
    expect(summary(dryRunOf({}))).toEqual([['rateLimit', 'rateLimit', { dryRun: true }]]);
    expect(summary(dryRunOf({ d: false }))).toEqual([['rateLimit', 'rateLimit', { dryRun: false }]]);
    expect(dryRunOf({})?.fixed).toBe(false);
  });

  it('spreads fragments (each once), applies @skip and @include, and merges fields of one response key', () => {
    const { read: collected } = read(
      `query ($s: Boolean = false) { ...A ...A ... on Query { b: pets(first: 1) { nodes { id } } }
         c: pets(first: 1) @skip(if: true) { nodes { id } } d: pets(first: 1) @include(if: $s) { nodes { id } } }
       fragment A on Query { b: pets(first: 1) { nodes { id } } e: pet(id: "1") { id } }`,
    );
    expect(summary(collected({}))?.map(([key]) => key)).toEqual(['b', 'e']);
    expect(summary(collected({ s: true }))?.map(([key]) => key)).toEqual(['b', 'e', 'd']);
  });

  it('coerces arguments as execution will: a single representation becomes a list of one', () => {
    const { read: single } = read('{ _entities(representations: { __typename: "Pet", id: "1" }) { __typename } }');
    expect(summary(single())).toEqual([
      ['_entities', '_entities', { representations: [{ __typename: 'Pet', id: '1' }] }],
    ]);
  });

  it('reads nothing when the variables cannot be coerced: execution refuses the operation', () => {
    const { read: invalid } = read('query ($id: ID!) { pet(id: $id) { id } }');
    expect(summary(invalid({}))).toEqual([]);
    expect(summary(invalid({ id: '3' }))).toEqual([['pet', 'pet', { id: '3' }]]);
  });
});
