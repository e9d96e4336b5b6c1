import type { MutationResolvers } from '../__generated__/resolvers-types.js';
import { badUserInput } from '../errors.js';
import { parseIdArgument } from '../ids.js';
import { toRestStatus } from '../pet-status.js';
import { locating } from './locating.js';

/** The store's rule for names (docs/rest-interface.md), checked here so a bad name costs no upstream request. */
const MAX_NAME_LENGTH = 200;

export const Mutation: MutationResolvers = {
  createPet: locating(async (_parent, { input }, context) => {
    const length = [...input.name].length;
    if (input.name.trim() === '' || length > MAX_NAME_LENGTH) {
      throw badUserInput(`name must be 1 to ${MAX_NAME_LENGTH} characters and not only white space`);
    }
    const categoryId = parseIdArgument(input.categoryId, 'categoryId', true);
    const pet = await context.client.createPet(context.key, {
      name: input.name,
      categoryId,
      status: input.status ? toRestStatus(input.status) : undefined,
    });
    context.petLoader.prime(pet.id, pet);
    return { pet };
  }),
};
