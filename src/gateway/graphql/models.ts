/**
 * The parent types of the resolvers (codegen mappers): REST wire shapes as the upstream layer hands
 * them, and the gateway's own. Resolvers rename and convert (categoryId → category, REST status →
 * enum, pet-status.ts). Types only, and nothing that imports the generated types, which import these.
 */

import type { PetModel } from '../upstream/models.js';
import type { CursorPosition } from './ids.js';

export type { PetModel };

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
  /** True when the page starts after a cursor (`after` was given): paging is forward only. */
  readonly hasPreviousPage: boolean;
}

/** A connection's PageInfo is the connection itself: its cursors are sealed only when asked for. */
export type PageInfoModel = PetConnectionModel;

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
