/**
 * The shared empty arguments of fields that take none (src/gateway/graphql/field-arguments.ts), through the
 * graphql-js executor Apollo Server runs: the CommonJS build, loaded here with `require` as Node
 * loads it for @apollo/server (vitest could hand an `import` graphql's ESM build instead).
 */

import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { NO_ARGUMENTS, shareEmptyArguments } from '../../../../src/gateway/graphql/field-arguments.js';

const graphql = createRequire(import.meta.url)('graphql') as typeof import('graphql');

const seen: Record<string, unknown> = {};
const schema = graphql.buildSchema(`
  type Query {
    plain: String
    writes: String
    defaulted(n: Int = 3): Int
    required(n: Int!): Int
  }
`);
const rootValue = {
  plain: (args: unknown) => {
    seen.plain = args;
    return 'plain';
  },
  writes: (args: Record<string, unknown>) => {
    args.leak = 'from one request to the next';
    return 'wrote';
  },
  defaulted: (args: { n: number }) => {
    seen.defaulted = args;
    return args.n;
  },
  required: (args: { n: number }) => args.n,
};

async function run(query: string, variableValues?: Record<string, unknown>) {
  return graphql.execute({ schema, document: graphql.parse(query), rootValue, variableValues });
}

describe('fields without arguments share one empty set of them', () => {
  it('takes effect on the graphql installed, once however often it is called', () => {
    const values = createRequire(import.meta.url)('graphql/execution/values.js');
    expect(shareEmptyArguments()).toBe(true);
    const installed = values.getArgumentValues;
    expect(shareEmptyArguments()).toBe(true);
    expect(values.getArgumentValues).toBe(installed);
  });

  it('hands a field without arguments the shared object: no keys, no prototype, frozen', async () => {
    shareEmptyArguments();
    const result = await run('{ plain again: plain }');
    expect(result).toEqual({ data: { plain: 'plain', again: 'plain' } });
    expect(seen.plain).toBe(NO_ARGUMENTS);
    expect(Object.keys(NO_ARGUMENTS)).toEqual([]);
    expect(Object.getPrototypeOf(NO_ARGUMENTS)).toBeNull();
    expect(Object.isFrozen(NO_ARGUMENTS)).toBe(true);
  });

  it('refuses a resolver that writes to them, so nothing leaks into the next request', async () => {
    shareEmptyArguments();
    const result = await run('{ writes plain }');
    expect(result.data).toEqual({ writes: null, plain: 'plain' });
    expect(result.errors?.[0]?.message).toMatch(/read only|not extensible/);
    expect(Object.keys(NO_ARGUMENTS)).toEqual([]);
  });

  it('leaves fields with arguments to graphql-js: defaults, variables and the missing required argument', async () => {
    shareEmptyArguments();
    expect(await run('{ defaulted }')).toEqual({ data: { defaulted: 3 } });
    expect(seen.defaulted).not.toBe(NO_ARGUMENTS);
    expect(await run('query ($n: Int!) { defaulted(n: $n) required(n: $n) }', { n: 7 })).toEqual({
      data: { defaulted: 7, required: 7 },
    });
    const missing = await run('{ required }');
    expect(missing.errors?.[0]?.message).toBe('Argument "n" of required type "Int!" was not provided.');
  });
});
