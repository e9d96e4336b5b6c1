/**
 * GraphQL Mesh v1 compose config for bench:throughput (bench/lib/peers.ts runs `mesh-compose`): the
 * Pet Store's OpenAPI document as one subgraph, at PETSTORE_URL; the key is read per request from TOKEN.
 */

import { defineConfig } from '@graphql-mesh/compose-cli';
import { loadOpenAPISubgraph } from '@omnigraph/openapi';

export const composeConfig = defineConfig({
  subgraphs: [
    {
      sourceHandler: loadOpenAPISubgraph('Petstore', {
        source: '../../schema/petstore.openapi.yaml',
        endpoint: process.env.PETSTORE_URL ?? 'http://127.0.0.1:4010/v1',
        operationHeaders: { Authorization: 'Bearer {env.TOKEN}' },
      }),
    },
  ],
});
