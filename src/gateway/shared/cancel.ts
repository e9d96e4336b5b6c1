/**
 * "Nobody waits for this any more": what an operation's upstream calls listen to, so a client that
 * leaves drops what it still has queued and cancels its GETs in flight.
 *
 * The stages use only this much of an AbortSignal, and any AbortSignal is one. The gateway's own
 * are a `Cancellation`: a list of listeners. An AbortController per request (and per shared
 * execution, and per shared GET) cost about 3% of a request's CPU in `npm run bench:profile`:
 * making its EventTarget, lifting its listener cap, and adding and removing its listeners. Most
 * requests are never cancelled, so the listeners are only ever added and removed.
 */

export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Cancellation implements CancelSignal {
  #reason: unknown;
  #aborted = false;
  #listeners: Array<() => void> = [];

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    // Listeners run once, as with `{ once: true }`: every caller here asks for that.
    if (!this.#aborted) this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.#listeners.lastIndexOf(listener);
    if (index >= 0) this.#listeners.splice(index, 1);
  }

  /** Marks it cancelled and runs each listener once, in the order they were added. */
  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}

/**
 * `work`, or the signal's reason as soon as it aborts: the caller stops waiting, `work` goes on
 * unawaited (its failure then unheard), and `onLeave` runs once.
 */
export function untilAborted<T>(work: Promise<T>, signal: CancelSignal, onLeave?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const leave = () => {
      work.catch(() => undefined);
      onLeave?.();
      reject(signal.reason);
    };
    if (signal.aborted) return leave();
    signal.addEventListener('abort', leave, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', leave);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', leave);
        reject(error);
      },
    );
  });
}
