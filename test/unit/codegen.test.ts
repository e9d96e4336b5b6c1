/** The committed resolver types must be what codegen makes of the committed schema today. */

import { readFile } from 'node:fs/promises';
import { generate } from '@graphql-codegen/cli';
import { expect, it } from 'vitest';
import config from '../../codegen.js';

it('src/gateway/__generated__/resolvers-types.ts is fresh (run npm run codegen after a schema change)', async () => {
  const [output] = await generate({ ...config, silent: true, cwd: process.cwd() }, false);
  const committed = await readFile(output.filename, 'utf8');
  expect(committed).toBe(output.content);
}, 30_000);
