/** The gateway's structured logger (pino); API keys and credentials are redacted from every line. */

import { type Logger, pino } from 'pino';

export type { Logger };

/** Paths that could ever hold a credential; pino replaces their values before a line is written. */
export const REDACTED_PATHS = [
  'apiKey',
  'key',
  'authorization',
  '*.apiKey',
  '*.key',
  '*.authorization',
  'req.headers.authorization',
  'headers.authorization',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination,
  );
}
