import type { PetResolvers } from '../__generated__/resolvers-types.js';
import { noteStale } from '../context.js';
import { parseIdArgument } from '../ids.js';
import { fromRestStatus } from '../pet-status.js';

export const Pet: PetResolvers = {
  // Federation `_entities`: the same per-request loader as Query.pet, so one batch serves every representation.
  __resolveReference: async (reference, context, info) => {
    const pet = await context.petLoader.load(parseIdArgument(reference.id, 'id'));
    if (pet !== null) noteStale(context, info.path, context.petStaleMs(pet.id));
    return pet;
  },
  status: (pet) => fromRestStatus(pet.status),
  category: (pet) => ({ id: pet.categoryId }),
};
