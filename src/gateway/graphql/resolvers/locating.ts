/**
 * The resolvers that reach the upstream hand graphql-js their gateway errors already located. An
 * error without a path is wrapped by graphql-js in a new GraphQLError (`locatedError`): a stack
 * captured, ours read and formatted, for every refused key, rate limit and unreachable upstream
 * answered (7% of the CPU of a client sending a new key with every request, under the profiler).
 * One that carries its path is kept as it is, with the same locations, path and extensions.
 */

import { type GraphQLResolveInfo, responsePathAsArray } from 'graphql';
import { GatewayError } from '../errors.js';

function located(error: unknown, info: GraphQLResolveInfo): unknown {
  if (!(error instanceof GatewayError) || error.path !== undefined) return error;
  return error.at(info.fieldNodes, responsePathAsArray(info.path));
}

export function locating<TParent, TArgs, TContext, TResult>(
  resolve: (parent: TParent, args: TArgs, context: TContext, info: GraphQLResolveInfo) => TResult,
): (parent: TParent, args: TArgs, context: TContext, info: GraphQLResolveInfo) => TResult {
  return (parent, args, context, info) => {
    let result: TResult;
    try {
      result = resolve(parent, args, context, info);
    } catch (error) {
      throw located(error, info);
    }
    if (!(result instanceof Promise)) return result;
    return result.catch((error: unknown) => {
      throw located(error, info);
    }) as TResult;
  };
}
