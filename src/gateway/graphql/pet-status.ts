/** GraphQL's PetStatus and the REST values of the spec, both ways. */

import type { RestPetStatus } from '../upstream/models.js';
import { PetStatus } from './__generated__/resolvers-types.js';

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
