import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import { noteStale } from '../context.js';
import { badUserInput } from '../errors.js';
import { parseIdArgument } from '../ids.js';
import { fetchPetConnection } from '../loaders/pets-connection.js';
import { toRestStatus } from '../pet-status.js';
import { locating } from './locating.js';

export const Query: QueryResolvers = {
  pets: locating((_parent, { first, after, status }, context, info) => {
    if (first === null || !Number.isInteger(first) || first < 1 || first > 100) {
      throw badUserInput('first must be an integer from 1 to 100');
    }
    return fetchPetConnection(
      context,
      { first, after: after ?? undefined, status: status ? toRestStatus(status) : undefined },
      info.path,
    );
  }),

  pet: locating(async (_parent, { id }, context, info) => {
    const pet = await context.petLoader.load(parseIdArgument(id, 'id'));
    if (pet !== null) noteStale(context, info.path, context.petStaleMs(pet.id));
    return pet;
  }),

  // With dryRun the operation never gets here: the estimate plugin answers it before execution.
  rateLimit: (_parent, _args, context) => ({ ...context.budget(), cost: context.operation.estimated }),
};
