/** The committed resolver types must be what codegen makes of the committed schema today. */

import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { generateResolverTypes, OUTPUT } from '../../codegen.js';

it('src/gateway/graphql/__generated__/resolvers-types.ts is fresh (run npm run codegen after a schema change)', async () => {
  expect(await readFile(OUTPUT, 'utf8')).toBe(await generateResolverTypes());
}, 30_000);
