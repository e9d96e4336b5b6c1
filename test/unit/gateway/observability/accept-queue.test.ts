/**
 * The accept queue read from /proc/net/tcp and tcp6. The tables here are text in the kernel's
 * format with chosen values (the kernel's own are read by test/integration/gateway/process-metrics.test.ts).
 */

import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { type AddressInfo, connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { acceptQueueOf, acceptQueueReader } from '../../../../src/gateway/observability/accept-queue.js';

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
// Port 4000 is 0FA0, port 40000 is 9C40.
const TCP = [
  HEADER,
  '   0: 0100007F:0FA0 00000000:0000 0A 00000000:00000096 00:00000000 00000000     0        0 203800 1 0 100 0 0 10 0',
  '   1: 0100007F:9C40 00000000:0000 0A 00000000:00000007 00:00000000 00000000     0        0 203802 1 0 100 0 0 10 0',
  '   2: 00000000:00FA 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0        0 203803 1 0 100 0 0 10 0',
  // An open connection on the same port with unread bytes is not a connection waiting to be accepted;
  // and the kernel lists every listening socket above the first that is not, so none comes after it.
  '   3: 0100007F:0FA0 0100007F:D2F0 01 00000000:000000FF 00:00000000 00000000     0        0 203801 1 0 20 4 30 10 -1',
  '   4: 0100007F:0FA0 00000000:0000 0A 00000000:00000040 00:00000000 00000000     0        0 203804 1 0 100 0 0 10 0',
  '',
].join('\n');
const TCP6 = [
  HEADER,
  '   0: 00000000000000000000000001000000:0FA0 00000000000000000000000000000000:0000 0A 00000000:00000002 00:00000000 00000000     0        0 203804 1 0 100 0 0 10 0',
  'not a line of the table',
].join('\n');

describe('acceptQueueOf', () => {
  it('sums the rx_queue of the LISTEN sockets on the port, IPv4 and IPv6, and of nothing else', () => {
    expect(acceptQueueOf([TCP, TCP6], 4000)).toBe(0x96 + 2);
    expect(acceptQueueOf([TCP, TCP6], 40000)).toBe(7);
    // Port 250 (00FA), listening on every address (0.0.0.0).
    expect(acceptQueueOf([TCP], 250)).toBe(3);
    expect(acceptQueueOf([TCP, TCP6], 4001)).toBe(0);
    expect(acceptQueueOf(['', 'garbage\n\n'], 4000)).toBe(0);
  });
});

describe('acceptQueueReader', () => {
  it('is undefined where there is no /proc/net/tcp, and reads a missing tcp6 as empty', () => {
    expect(acceptQueueReader(() => undefined)).toBeUndefined();
    const reads: string[] = [];
    const reader = acceptQueueReader((path) => {
      reads.push(path);
      return path === '/proc/net/tcp' ? TCP : undefined;
    });
    expect(reader?.(4000)).toBe(0x96);
    // The tables are read again at every scrape, not remembered.
    expect(reader?.(4000)).toBe(0x96);
    expect(reads.filter((path) => path === '/proc/net/tcp')).toHaveLength(3);
  });
});

describe('the kernel', () => {
  it.runIf(process.platform === 'linux')('lists every listening socket of /proc/net/tcp above the others', async () => {
    // At least one socket of each kind: a listener, and a connection to it.
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(client, 'connect');
    try {
      const states = (await readFile('/proc/net/tcp', 'latin1'))
        .split('\n')
        .slice(1)
        .map((line) => line.trim().split(/\s+/)[3])
        .filter((state) => state !== undefined);
      const firstOther = states.findIndex((state) => state !== '0A');
      expect(firstOther).toBeGreaterThan(0);
      expect(states.slice(firstOther)).not.toContain('0A');
    } finally {
      client.destroy();
      server.close();
    }
  });
});
