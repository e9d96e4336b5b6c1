/** The gateway's own cancellation (rest/cancel.ts): what the stages rely on of an AbortSignal. */

import { describe, expect, it } from 'vitest';
import { Cancellation } from '../../../../src/gateway/shared/cancel.js';

describe('Cancellation', () => {
  it('runs each listener once, in order, with the reason set before the first runs', () => {
    const cancel = new Cancellation();
    const seen: unknown[] = [];
    cancel.addEventListener('abort', () => seen.push(['first', cancel.aborted, cancel.reason]));
    cancel.addEventListener('abort', () => seen.push(['second', cancel.reason]));
    expect(cancel.aborted).toBe(false);
    const reason = new Error('the client left');
    cancel.abort(reason);
    cancel.abort(new Error('again'));
    expect(seen).toEqual([
      ['first', true, reason],
      ['second', reason],
    ]);
    expect(cancel.reason).toBe(reason);
  });

  it('never runs a listener that was removed, nor one added after the abort', () => {
    const cancel = new Cancellation();
    const calls: string[] = [];
    const removed = () => calls.push('removed');
    cancel.addEventListener('abort', removed);
    cancel.addEventListener('abort', () => calls.push('kept'));
    cancel.removeEventListener('abort', removed);
    cancel.removeEventListener('abort', () => calls.push('never added'));
    cancel.abort();
    cancel.addEventListener('abort', () => calls.push('late'));
    expect(calls).toEqual(['kept']);
  });

  it('gives an AbortError as the reason when none is given, as AbortController does', () => {
    const cancel = new Cancellation();
    cancel.abort();
    expect(cancel.reason).toBeInstanceOf(DOMException);
    expect((cancel.reason as DOMException).name).toBe('AbortError');
  });
});
