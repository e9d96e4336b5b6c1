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

/**
 * Writes out every line the logger holds, then stops it: for the last lines before the process
 * exits, within `ms`. pino's own flush at exit writes what is still buffered at once, while a write
 * already handed to the OS may land after it: on a loaded machine the last two lines came out in the
 * wrong order. A logger on a destination of the caller's (tests) has nothing to wait for.
 */
export function closeLogger(logger: Logger, ms = 1_000): Promise<void> {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | { end?: () => void; once?: (event: string, listener: () => void) => void }
    | undefined;
  return new Promise((resolve) => {
    if (typeof stream?.end !== 'function' || typeof stream.once !== 'function') return resolve();
    stream.once('close', resolve);
    setTimeout(resolve, ms).unref();
    stream.end();
  });
}

type Level = 'debug' | 'info' | 'warn' | 'error';

/** What a request's code writes lines through: the four levels it uses. */
export type LineLogger = Pick<Logger, Level>;

/**
 * The logger of one request: `parent`'s child naming it (`reqId`), made when the request first
 * writes a line at a level that is on. Most requests write none, and making a child is not free:
 * pino runs each binding through the redaction of REDACTED_PATHS (the wildcards take every key),
 * about 1.4 KB allocated per request (V8 sampling heap profiler). A class, not a getter: Apollo Server
 * copies the context with Object.assign, which would call a getter on every request.
 */
class RequestLogger implements LineLogger {
  readonly #parent: Logger;
  readonly #reqId: string;
  #child: Logger | undefined;

  constructor(parent: Logger, reqId: string) {
    this.#parent = parent;
    this.#reqId = reqId;
  }

  #at(level: Level): Logger | undefined {
    if (!this.#parent.isLevelEnabled(level)) return undefined;
    this.#child ??= this.#parent.child({ reqId: this.#reqId });
    return this.#child;
  }

  debug(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#at('debug')?.debug(obj, msg, ...args);
  }

  info(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#at('info')?.info(obj, msg, ...args);
  }

  warn(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#at('warn')?.warn(obj, msg, ...args);
  }

  error(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#at('error')?.error(obj, msg, ...args);
  }
}

export function requestLogger(parent: Logger, reqId: string): LineLogger {
  return new RequestLogger(parent, reqId);
}
