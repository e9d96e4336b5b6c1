/**
 * The in-flight registry (src/gateway/shared/in-flight.ts) behind shared executions and shared GETs: a
 * Map that is copied into a fresh one every few dozen insertions. Whatever the copies, it must
 * answer as one Map would: an entry is found until it is deleted, and only the entries picked go.
 */

import { describe, expect, it } from 'vitest';
import { InFlight } from '../../../../src/gateway/shared/in-flight.js';

describe('InFlight', () => {
  it('answers as one Map would across many copies: entries kept, replaced and deleted', () => {
    const inFlight = new InFlight<number>();
    const model = new Map<string, number>();
    // Names come and go as requests do: each stays for a while, some are set again, then go.
    for (let i = 0; i < 1_000; i++) {
      inFlight.set(`n${i}`, i);
      model.set(`n${i}`, i);
      if (i % 7 === 0) {
        inFlight.set(`n${i}`, -i);
        model.set(`n${i}`, -i);
      }
      if (i >= 40) {
        inFlight.delete(`n${i - 40}`);
        model.delete(`n${i - 40}`);
      }
      for (const probe of [i, i - 39, i - 40, i - 100]) expect(inFlight.get(`n${probe}`)).toBe(model.get(`n${probe}`));
    }
    for (let i = 0; i < 1_000; i++) expect(inFlight.get(`n${i}`)).toBe(model.get(`n${i}`));
  });

  it('deletes exactly the entries picked, in whichever copy they were set', () => {
    const inFlight = new InFlight<{ readonly key: string }>();
    for (let i = 0; i < 200; i++) inFlight.set(`${i % 2 === 0 ? 'a' : 'b'} ${i}`, { key: i % 2 === 0 ? 'a' : 'b' });
    inFlight.deleteWhere((name, value) => name.startsWith('a ') && value.key === 'a');
    for (let i = 0; i < 200; i++) {
      expect(inFlight.get(`${i % 2 === 0 ? 'a' : 'b'} ${i}`)).toEqual(i % 2 === 0 ? undefined : { key: 'b' });
    }
  });
});
