/**
 * A GET whose connection was closed or reset (before or during its answer) is sent once more:
 * GET is idempotent (RFC 9110 section 9.2.2), and a keep-alive socket the server closed just as
 * we wrote is routine. The resend goes through the stages below again (budget, limiter), so it is
 * counted, and it shares its first attempt's deadline. A POST is never resent: the upstream may
 * have created the pet.
 */

import { isWrite, type Stage } from '../pipeline.js';

const RESET_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'UND_ERR_CLOSED']);

export function isConnectionReset(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code !== undefined && RESET_CODES.has(code);
}

export const resendOnReset: Stage = (next) => async (call) => {
  if (isWrite(call)) return next(call);
  const firstAttempt = {};
  try {
    return await next({ ...call, firstAttempt, dispatched: false });
  } catch (error) {
    if (!isConnectionReset(error) || call.signal?.aborted) throw error;
    call.trace?.resent((error as { code: string }).code);
    return next({ ...call, firstAttempt, dispatched: false });
  }
};
