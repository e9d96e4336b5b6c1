/**
 * The typed client example (examples/client/: graphql-request with the documents graphql-codegen's
 * client preset generated) against a gateway on port 0 in front of the reference store seeded with
 * the demo catalogue, as `npm start` fronts it. It must page through every pet with `after` until
 * hasNextPage is false and create one. Run once through its function, to compare what it saw with
 * the store, and once as the program `npm run example:client` runs, for its command line and summary.
 * Its persisted-documents mode is tested where the gateway serves the manifest.
 */

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runExample } from '../../../examples/client/main.js';
import { demoCatalogue } from '../../../src/petstore/seed.js';
import type { Pet } from '../../../src/petstore/store.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ store: { seed: demoCatalogue() } });
});
afterAll(() => stack.close());

/** Every pet in the store, in id order, as a client sees them. */
function storePets(status?: Pet['status']): { id: string; name: string; status: string }[] {
  return stack.store.catalogue
    .page({ limit: Number.MAX_SAFE_INTEGER, status })
    .pets.map((pet) => ({ id: String(pet.id), name: pet.name, status: pet.status.toUpperCase() }));
}

it('pages through every pet of the demo store with after, then creates one and finds it by id', async () => {
  const before = storePets();
  expect(before).toHaveLength(121);
  stack.requests.length = 0;

  const summary = await runExample({ url: stack.gateway.url, first: 25 });

  expect(summary.pets).toEqual(before);
  expect(summary.pages).toBe(5);
  expect(stack.count('listPets')).toBeGreaterThanOrEqual(5);
  expect(stack.count('createPet')).toBe(1);
  expect(stack.store.catalogue.size).toBe(122);
  // The demo catalogue holds 2^53 + 1, so the new id is above 2^53: exact through the typed client.
  expect(summary.created).toEqual({
    id: '9007199254740994',
    name: stack.store.catalogue.get(9007199254740994n)?.name,
    status: 'AVAILABLE',
    category: { id: '1' },
  });
  expect(summary.foundCreated).toBe(true);
  expect(summary.rateLimit.cost).toBe(0);
});

it('runs as npm run example:client does: a status filter from its command line, and a summary', async () => {
  const sold = storePets('sold');
  const created = stack.store.catalogue.size;
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'examples/client/main.ts', stack.gateway.url, '--status', 'sold', '--first', '12'],
      { cwd: ROOT, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number | null) : 0, stdout, stderr }),
    );
  });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(stack.store.catalogue.size).toBe(created + 1);
  const id = String(9007199254740994n + 1n);
  expect(run.stdout.split('\n').slice(0, 2)).toEqual([
    `Paged through ${sold.length} pets in ${Math.ceil(sold.length / 12)} pages (${sold.length} SOLD).`,
    expect.stringMatching(
      new RegExp(
        `^Created pet ${id} "Example pet [^"]+" \\(AVAILABLE, category 1\\); pet\\(id: "${id}"\\) finds it\\.$`,
      ),
    ),
  ]);
}, 40_000);
