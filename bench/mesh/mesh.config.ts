/**
 * GraphQL Mesh v1 compose config for the peer benchmark: the Pet Store's OpenAPI document as one
 * subgraph. `mesh-compose -o supergraph.graphql` (setup.sh) writes the supergraph that
 * `hive-gateway supergraph` serves. The endpoint is read when composing (PETSTORE_URL, default
 * the reference store of `PORT=4010 npm run petstore`); the key is read per request from TOKEN.
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
