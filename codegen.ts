/**
 * `npm run codegen` (`graphql-codegen --config codegen.ts`): everything generated from the schema,
 * committed, and checked fresh by test/unit/codegen.test.ts (`--check`).
 *
 * - the gateway's resolver types, with the REST wire models as the parent types (mappers), and
 *   federation on so `__resolveReference` and `_FieldSet` are typed;
 * - a typed client for the example operations of examples/client/ (the client preset), with the
 *   persisted-documents manifest the gateway can serve as its trusted documents.
 *
 * `@graphql-codegen/cli` is held at 6.3: 7 pulls listr2 10 and @inquirer/prompts 8, which declare
 * Node ≥ 22 (EBADENGINE on Node 20); package.json's `overrides` keep 6.3's loaders on Node 20 lines.
 */

import type { CodegenConfig } from '@graphql-codegen/cli';

const SCHEMA = 'schema/petstore.graphql';

const config: CodegenConfig = {
  overwrite: true,
  // Relative imports in generated files get the `.js` suffix NodeNext resolution needs.
  emitLegacyCommonJSImports: false,
  generates: {
    'src/gateway/graphql/__generated__/resolvers-types.ts': {
      schema: SCHEMA,
      plugins: ['typescript', 'typescript-resolvers'],
      config: {
        federation: true,
        useTypeImports: true,
        // Paths relative to the generated file.
        contextType: '../context.js#GatewayContext',
        mappers: {
          Pet: '../models.js#PetModel',
          Category: '../models.js#CategoryModel',
          PetConnection: '../models.js#PetConnectionModel',
          PetEdge: '../models.js#PetEdgeModel',
          PageInfo: '../models.js#PageInfoModel',
          CreatePetPayload: '../models.js#CreatePetPayloadModel',
          RateLimit: '../models.js#RateLimitModel',
        },
        scalars: { ID: 'string' },
      },
    },
    'examples/client/__generated__/': {
      schema: SCHEMA,
      documents: 'examples/client/operations/*.graphql',
      preset: 'client',
      presetConfig: {
        // No fragments to mask; the operations select plain fields.
        fragmentMasking: false,
        persistedDocuments: { hashAlgorithm: 'sha256' },
      },
      config: {
        useTypeImports: true,
        scalars: { ID: 'string' },
        // String unions: the client sends and compares 'AVAILABLE', no enum object to import.
        enumsAsTypes: true,
      },
    },
  },
};

export default config;
