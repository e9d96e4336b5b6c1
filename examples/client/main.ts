/**
 * `npm run example:client -- [URL] [--persisted] [--key KEY] [--first N] [--status STATUS]`: a client
 * app of the gateway, typed by graphql-codegen. It pages through every pet with `after` until
 * `hasNextPage` is false, creates one pet, looks it up by id, reads the key's budget, and prints a
 * summary. URL defaults to GATEWAY_URL, then http://localhost:4000/graphql (`npm start`).
 */

import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CreatePetDocument,
  type CreatePetMutation,
  PetDocument,
  type PetStatus,
  PetsDocument,
  type PetsQuery,
  RateLimitDocument,
  type RateLimitQuery,
} from './__generated__/graphql.js';
import { createGatewayClient, describeError, type GatewayClientOptions } from './client.js';

export interface ExampleOptions extends GatewayClientOptions {
  /** Pets per page, 1 to 100 (default 100, the largest page: one upstream request each). */
  readonly first?: number;
  /** Page through pets of this status only. */
  readonly status?: PetStatus;
  /** Name of the pet to create (default: "Example pet" and the time). */
  readonly name?: string;
}

export interface ExampleSummary {
  /** Every pet listed, in the order the pages gave them. */
  readonly pets: PetsQuery['pets']['nodes'];
  readonly pages: number;
  readonly created: CreatePetMutation['createPet']['pet'];
  /** Whether `pet(id)` found the created pet right after (the gateway promises a client reads its writes). */
  readonly foundCreated: boolean;
  readonly rateLimit: RateLimitQuery['rateLimit'];
}

/** Runs the example against a gateway and returns what it saw. */
export async function runExample(options: ExampleOptions): Promise<ExampleSummary> {
  const client = createGatewayClient(options);
  const pets: PetsQuery['pets']['nodes'][number][] = [];
  let after: string | null = null;
  let pages = 0;
  for (;;) {
    const { pets: page }: PetsQuery = await client.request(PetsDocument, {
      first: options.first ?? 100,
      after,
      status: options.status ?? null,
    });
    pages++;
    pets.push(...page.nodes);
    if (!page.pageInfo.hasNextPage) break;
    // A next page with no cursor to reach it would have this loop ask for the first page forever.
    if (page.pageInfo.endCursor === null) throw new Error('the gateway said hasNextPage without an endCursor');
    after = page.pageInfo.endCursor;
  }

  const { createPet } = await client.request(CreatePetDocument, {
    input: { name: options.name ?? `Example pet ${new Date().toISOString()}`, categoryId: '1' },
  });
  const { pet } = await client.request(PetDocument, { id: createPet.pet.id });
  const { rateLimit } = await client.request(RateLimitDocument, {});
  return { pets, pages, created: createPet.pet, foundCreated: pet?.id === createPet.pet.id, rateLimit };
}

/** The summary a person reads. */
export function formatSummary(summary: ExampleSummary): string {
  const byStatus = new Map<string, number>();
  for (const pet of summary.pets)
    byStatus.set(pet.status ?? 'no status', (byStatus.get(pet.status ?? 'no status') ?? 0) + 1);
  const counts = [...byStatus].map(([status, count]) => `${count} ${status}`).join(', ');
  const { created, rateLimit } = summary;
  return [
    `Paged through ${summary.pets.length} pets in ${summary.pages} pages${counts ? ` (${counts})` : ''}.`,
    `Created pet ${created.id} "${created.name}" (${created.status}, category ${created.category.id}); ` +
      `pet(id: "${created.id}") ${summary.foundCreated ? 'finds it' : 'does NOT find it'}.`,
    `Budget: ${rateLimit.remaining} of ${rateLimit.limit} requests left, ${rateLimit.used} used` +
      `${rateLimit.resetAt ? `, next one freed at ${rateLimit.resetAt}` : ''}.`,
  ].join('\n');
}

const STATUSES: readonly PetStatus[] = ['AVAILABLE', 'PENDING', 'SOLD'];

function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): ExampleOptions {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      persisted: { type: 'boolean' },
      key: { type: 'string' },
      first: { type: 'string' },
      status: { type: 'string' },
    },
  });
  const first = values.first === undefined ? undefined : Number(values.first);
  if (first !== undefined && !(Number.isInteger(first) && first >= 1 && first <= 100)) {
    throw new Error('--first must be an integer from 1 to 100');
  }
  const status = values.status?.toUpperCase();
  if (status !== undefined && !STATUSES.includes(status as PetStatus)) {
    throw new Error(`--status must be one of ${STATUSES.join(', ')}`);
  }
  const key = values.key ?? env.GATEWAY_API_KEY;
  return {
    url: positionals[0] ?? env.GATEWAY_URL ?? 'http://localhost:4000/graphql',
    persisted: values.persisted ?? env.GATEWAY_PERSISTED === 'true',
    ...(key ? { key } : {}),
    ...(first === undefined ? {} : { first }),
    ...(status === undefined ? {} : { status: status as PetStatus }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const options = parseCommandLine(process.argv.slice(2), process.env);
    console.log(formatSummary(await runExample(options)));
  } catch (error) {
    console.error(`example:client: ${describeError(error)}`);
    process.exitCode = 1;
  }
}
