/**
 * `npm run codegen`: typed resolvers from the schema, with REST wire models as the parent types.
 *
 * Runs the codegen plugins through `@graphql-codegen/core` rather than the CLI: the CLI (v7) pulls
 * in a loader and terminal stack that asks for Node 22.12 (13 EBADENGINE warnings on Node 20), for
 * one local schema file. The schema is sorted as the CLI sorts it, so the output is the same.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { codegen } from '@graphql-codegen/core';
import * as typescript from '@graphql-codegen/typescript';
import * as typescriptResolvers from '@graphql-codegen/typescript-resolvers';
import { getDocumentNodeFromSchema } from '@graphql-tools/utils';

// The plugins are CommonJS and check `instanceof` against CommonJS graphql; under an ESM loader
// (vitest) `import 'graphql'` is the ESM build, another realm. Build the schema with theirs.
const { buildASTSchema, lexicographicSortSchema, parse } = createRequire(import.meta.url)(
  'graphql',
) as typeof import('graphql');

const SCHEMA = new URL('schema/petstore.graphql', import.meta.url);
export const OUTPUT = 'src/gateway/graphql/__generated__/resolvers-types.ts';

const config = {
  federation: true,
  useTypeImports: true,
  contextType: '../context.js#GatewayContext',
  mappers: {
    Pet: '../models.js#PetModel',
    Category: '../models.js#CategoryModel',
    PetConnection: '../models.js#PetConnectionModel',
    PetEdge: '../models.js#PetEdgeModel',
    CreatePetPayload: '../models.js#CreatePetPayloadModel',
    RateLimit: '../models.js#RateLimitModel',
  },
  scalars: { ID: 'string' },
};

/** The resolver types for the committed schema, as text. */
export async function generateResolverTypes(): Promise<string> {
  // Federation directives (@key, @link) are not defined in the file; the subgraph library adds them at run time.
  const schema = lexicographicSortSchema(
    buildASTSchema(parse(await readFile(SCHEMA, 'utf8')), { assumeValidSDL: true }),
  );
  return codegen({
    filename: OUTPUT,
    schema: getDocumentNodeFromSchema(schema),
    schemaAst: schema,
    documents: [],
    config,
    plugins: [{ typescript: {} }, { 'typescript-resolvers': {} }],
    pluginMap: { typescript, 'typescript-resolvers': typescriptResolvers },
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(new URL(OUTPUT, import.meta.url), await generateResolverTypes());
  console.log(`codegen: wrote ${OUTPUT}`);
}
