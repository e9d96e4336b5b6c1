/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "mutation CreatePet($input: CreatePetInput!) {\n  createPet(input: $input) {\n    pet {\n      id\n      name\n      status\n      category {\n        id\n      }\n    }\n  }\n}": typeof types.CreatePetDocument,
    "query Pet($id: ID!) {\n  pet(id: $id) {\n    id\n    name\n    status\n    category {\n      id\n    }\n  }\n}": typeof types.PetDocument,
    "query Pets($first: Int = 100, $after: String, $status: PetStatus) {\n  pets(first: $first, after: $after, status: $status) {\n    nodes {\n      id\n      name\n      status\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}": typeof types.PetsDocument,
    "query RateLimit($dryRun: Boolean = false) {\n  rateLimit(dryRun: $dryRun) {\n    limit\n    remaining\n    used\n    resetAt\n    cost\n  }\n}": typeof types.RateLimitDocument,
};
const documents: Documents = {
    "mutation CreatePet($input: CreatePetInput!) {\n  createPet(input: $input) {\n    pet {\n      id\n      name\n      status\n      category {\n        id\n      }\n    }\n  }\n}": types.CreatePetDocument,
    "query Pet($id: ID!) {\n  pet(id: $id) {\n    id\n    name\n    status\n    category {\n      id\n    }\n  }\n}": types.PetDocument,
    "query Pets($first: Int = 100, $after: String, $status: PetStatus) {\n  pets(first: $first, after: $after, status: $status) {\n    nodes {\n      id\n      name\n      status\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}": types.PetsDocument,
    "query RateLimit($dryRun: Boolean = false) {\n  rateLimit(dryRun: $dryRun) {\n    limit\n    remaining\n    used\n    resetAt\n    cost\n  }\n}": types.RateLimitDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation CreatePet($input: CreatePetInput!) {\n  createPet(input: $input) {\n    pet {\n      id\n      name\n      status\n      category {\n        id\n      }\n    }\n  }\n}"): (typeof documents)["mutation CreatePet($input: CreatePetInput!) {\n  createPet(input: $input) {\n    pet {\n      id\n      name\n      status\n      category {\n        id\n      }\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query Pet($id: ID!) {\n  pet(id: $id) {\n    id\n    name\n    status\n    category {\n      id\n    }\n  }\n}"): (typeof documents)["query Pet($id: ID!) {\n  pet(id: $id) {\n    id\n    name\n    status\n    category {\n      id\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query Pets($first: Int = 100, $after: String, $status: PetStatus) {\n  pets(first: $first, after: $after, status: $status) {\n    nodes {\n      id\n      name\n      status\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}"): (typeof documents)["query Pets($first: Int = 100, $after: String, $status: PetStatus) {\n  pets(first: $first, after: $after, status: $status) {\n    nodes {\n      id\n      name\n      status\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query RateLimit($dryRun: Boolean = false) {\n  rateLimit(dryRun: $dryRun) {\n    limit\n    remaining\n    used\n    resetAt\n    cost\n  }\n}"): (typeof documents)["query RateLimit($dryRun: Boolean = false) {\n  rateLimit(dryRun: $dryRun) {\n    limit\n    remaining\n    used\n    resetAt\n    cost\n  }\n}"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;