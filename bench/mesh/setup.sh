#!/usr/bin/env bash
# npm run bench:mesh:setup: install GraphQL Mesh v1 here (once; about 800 packages, 500 MB, kept out
# of the project's npm ci) and compose bench/mesh/supergraph.graphql from schema/petstore.openapi.yaml.
# PETSTORE_URL (default http://127.0.0.1:4010/v1) is the upstream baked into the supergraph;
# bench/throughput.ts composes its own against the store it starts.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -d node_modules ]; then
  npm install --no-audit --no-fund --loglevel=error
fi
npx mesh-compose -o supergraph.graphql
echo "bench/mesh: wrote $(pwd)/supergraph.graphql"
