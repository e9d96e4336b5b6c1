/** `npm run codegen`: typed resolvers from the schema, with REST wire models as the parent types. */

import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema/petstore.graphql',
  generates: {
    'src/gateway/__generated__/resolvers-types.ts': {
      plugins: ['typescript', 'typescript-resolvers'],
      config: {
        federation: true,
        useTypeImports: true,
        contextType: '../context.js#GatewayContext',
        mappers: {
          Pet: '../models.js#PetModel',
          Category: '../models.js#CategoryModel',
          PetConnection: '../models.js#PetConnectionModel',
          PetEdge: '../models.js#PetEdgeModel',
          CreatePetPayload: '../models.js#CreatePetPayloadModel',
        },
        scalars: { ID: 'string' },
      },
    },
  },
};

export default config;
