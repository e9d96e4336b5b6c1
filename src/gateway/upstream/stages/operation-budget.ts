import { charge, refund } from '../operation.js';
import type { Stage } from '../pipeline.js';

/**
 * The stage that draws each request from its operation's budget before it waits for anything,
 * and gives it back when the request never reached the upstream.
 */
export const operationBudget: Stage = (next) => async (call) => {
  charge(call.operation);
  try {
    return await next(call);
  } catch (error) {
    if (!call.dispatched) refund(call.operation);
    throw error;
  }
};
