import type { PetResolvers } from '../__generated__/resolvers-types.js';
import { parseIdArgument } from '../ids.js';
import { fromRestStatus } from '../models.js';

export const Pet: PetResolvers = {
  // Federation `_entities`: the same per-request loader as Query.pet, so one batch serves every representation.
  __resolveReference: (reference, context) => context.petLoader.load(parseIdArgument(reference.id, 'id')),
  status: (pet) => fromRestStatus(pet.status),
  category: (pet) => ({ id: pet.categoryId }),
};
