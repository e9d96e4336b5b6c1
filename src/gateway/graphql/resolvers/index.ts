import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Mutation } from './Mutation.js';
import { PageInfo } from './PageInfo.js';
import { Pet } from './Pet.js';
import { PetConnection } from './PetConnection.js';
import { PetEdge } from './PetEdge.js';
import { Query } from './Query.js';
import { RateLimit } from './RateLimit.js';

export const resolvers: Resolvers = {
  Query,
  Mutation,
  Pet,
  PetConnection,
  PetEdge,
  PageInfo,
  RateLimit,
};
