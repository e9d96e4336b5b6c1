/**
 * REST wire shapes as the gateway holds them (codegen mappers). Ids stay exact decimal strings;
 * resolvers rename and convert (categoryId → category, REST status → enum).
 */

import { PetStatus } from './__generated__/resolvers-types.js';
import type { CursorPosition } from './ids.js';

export type RestPetStatus = 'available' | 'pending' | 'sold';

const TO_REST: Readonly<Record<PetStatus, RestPetStatus>> = {
  [PetStatus.Available]: 'available',
  [PetStatus.Pending]: 'pending',
  [PetStatus.Sold]: 'sold',
};
const FROM_REST = new Map<string, PetStatus>(
  Object.entries(TO_REST).map(([value, rest]) => [rest, value as PetStatus]),
);

/** The REST value of a GraphQL PetStatus. */
export function toRestStatus(status: PetStatus): RestPetStatus {
  return TO_REST[status];
}

/** The GraphQL PetStatus of a REST value; null for a value the schema does not know (an upstream newer than its spec). */
export function fromRestStatus(status: string | undefined): PetStatus | null {
  return status === undefined ? null : (FROM_REST.get(status) ?? null);
}

/** A Pet from the upstream: ids as decimal strings, status as the REST sent it (may be a value we do not know). */
export interface PetModel {
  readonly id: string;
  readonly name: string;
  readonly categoryId: string;
  readonly status: string | undefined;
}

export interface CategoryModel {
  readonly id: string;
}

/** An edge; its cursor is encoded only when a client asks for it. */
export interface PetEdgeModel {
  readonly position: CursorPosition;
  readonly node: PetModel;
}

/**
 * A page of the `pets` connection, already cut to `first`: its pets, and where the connection
 * continues after each, worked out only when an edge or a cursor is asked for (most clients ask
 * for nodes alone).
 */
export interface PetConnectionModel {
  readonly nodes: readonly PetModel[];
  /** Where the connection continues after `nodes[index]`. */
  position(index: number): CursorPosition;
  readonly hasNextPage: boolean;
}

export interface CreatePetPayloadModel {
  readonly pet: PetModel;
}

/** The key's budget as the limiter describes it, and the operation's estimated cost. */
export interface RateLimitModel {
  readonly limit: number;
  readonly remaining: number;
  readonly used: number;
  /** Epoch ms, or undefined when nothing is known to be spent. */
  readonly resetAt: number | undefined;
  readonly cost: number;
}
