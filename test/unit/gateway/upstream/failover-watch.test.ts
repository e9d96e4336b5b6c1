/**
 * How a Redis connection tells a failover (src/gateway/upstream/redis/connection.ts failoverWatch):
 * once, when a primary serves that had not served lately, whatever a Cluster's slot map shows on the
 * way. The sequences are those ioredis gave here (test/system/redis-ha.test.ts); a clock the test moves.
 */

import { describe, expect, it } from 'vitest';
import { failoverWatch } from '../../../../src/gateway/upstream/redis/connection.js';

function watched() {
  const told: [string, string][] = [];
  const clock = { now: 0 };
  const watch = failoverWatch(
    (from, to) => told.push([from, to]),
    () => clock.now,
  );
  return { told, clock, watch };
}

describe('telling a Redis failover', () => {
  it('tells nothing at the first primaries, nor when one is lost before its replica is promoted', () => {
    const { told, watch } = watched();
    watch('a:1,b:1,c:1');
    watch('b:1,c:1');
    expect(told).toEqual([]);
  });

  it('tells a promoted replica once, though the slot map shows the dead primary again for a moment', () => {
    const { told, clock, watch } = watched();
    watch('a:1,b:1,c:1');
    clock.now = 2_222;
    watch('b:1,c:1,d:1');
    clock.now = 2_241;
    watch('a:1,b:1,c:1');
    clock.now = 2_402;
    watch('b:1,c:1,d:1');
    expect(told).toEqual([['a:1,b:1,c:1', 'b:1,c:1,d:1']]);
  });

  it('tells a Sentinel-found primary, and one that comes back after serving elsewhere a minute', () => {
    const { told, clock, watch } = watched();
    watch('p:1');
    clock.now = 10_000;
    watch('p:2');
    clock.now = 10_000 + 60_001;
    watch('p:1');
    expect(told).toEqual([
      ['p:1', 'p:2'],
      ['p:2', 'p:1'],
    ]);
  });

  it('tells no failover when one of the primaries long serving is lost, nor when the rest go on', () => {
    const { told, clock, watch } = watched();
    watch('a:1,b:1,c:1');
    clock.now = 100_000;
    watch('b:1,c:1');
    clock.now = 200_000;
    watch('b:1,c:1,e:1');
    expect(told).toEqual([['b:1,c:1', 'b:1,c:1,e:1']]);
  });
});
