/**
 * A small second subgraph for the federation example: a shelter's adoptions service that extends
 * `Pet` (by its key, with an adoption fee), owns `Category` (the pet store subgraph only knows its
 * id), and has a root field that returns pets, so a query crosses into the pet store for their names.
 */

import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';

/** The subgraph's SDL, kept in a file so `npm run supergraph:compose` reads the same schema. */
export const adoptionsTypeDefs = parse(readFileSync(new URL('./adoptions.graphql', import.meta.url), 'utf8'));

const CATEGORY_NAMES: Readonly<Record<string, string>> = { '1': 'Dogs', '2': 'Cats', '3': 'Birds', '4': 'Fish' };

interface PetReference {
  readonly id: string;
}

export function adoptionsResolvers(featured: readonly string[]) {
  return {
    Query: { featuredPets: (): PetReference[] => featured.map((id) => ({ id })) },
    Pet: {
      __resolveReference: (reference: PetReference): PetReference => ({ id: reference.id }),
      // Ids are int64 decimal strings: BigInt keeps them exact.
      adoptionFee: (pet: PetReference): number => 50 + Number(BigInt(pet.id) % 5n) * 10,
    },
    Category: {
      __resolveReference: (reference: { id: string }) => ({
        id: reference.id,
        name: CATEGORY_NAMES[reference.id] ?? `Category ${reference.id}`,
      }),
    },
  };
}

export interface AdoptionsOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: string;
  /** Ids `featuredPets` returns, in order. */
  readonly featured: readonly string[];
}

export interface SubgraphHandle {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the adoptions subgraph; its GraphQL endpoint is `url` (any path). */
export async function startAdoptionsSubgraph(options: AdoptionsOptions): Promise<SubgraphHandle> {
  const server = new ApolloServer({
    schema: buildSubgraphSchema([{ typeDefs: adoptionsTypeDefs, resolvers: adoptionsResolvers(options.featured) }]),
    plugins: [ApolloServerPluginInlineTraceDisabled()],
  });
  const { url } = await startStandaloneServer(server, {
    listen: { port: options.port, ...(options.host ? { host: options.host } : {}) },
  });
  return { url, close: () => server.stop() };
}
