/** REST wire shapes as the client hands them on: ids as exact decimal strings, status as the upstream sent it. */

/** A Pet of the spec. `status` may be a value newer than the spec (the GraphQL layer decides what to make of it). */
export interface PetModel {
  readonly id: string;
  readonly name: string;
  readonly categoryId: string;
  readonly status: string | undefined;
}

/** PetStatus of the spec, as `GET /pets?status=` and `POST /pets` take it. */
export type RestPetStatus = 'available' | 'pending' | 'sold';
