/**
 * `npm run supergraph:compose [-- --config FILE --output FILE]`: composes the supergraph of a
 * Rover-format config (default examples/federation/supergraph.yaml) and writes it (default
 * examples/federation/supergraph.graphql), as `rover supergraph compose --config FILE > OUT` does.
 */

import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { composeSupergraph, readSupergraphConfig } from './supergraph.js';

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: fileURLToPath(new URL('./supergraph.yaml', import.meta.url)) },
    output: { type: 'string', default: fileURLToPath(new URL('./supergraph.graphql', import.meta.url)) },
  },
});

try {
  const config = readSupergraphConfig(values.config, process.env);
  const { supergraphSdl, hints } = await composeSupergraph(config);
  for (const hint of hints) console.warn(`hint: ${hint}`);
  writeFileSync(values.output, supergraphSdl);
  console.log(`Wrote ${values.output} (${config.subgraphs.map((subgraph) => subgraph.name).join(', ')})`);
} catch (error) {
  console.error(`supergraph:compose: ${(error as Error).message}`);
  process.exit(1);
}
