/**
 * The reading of tcpdump's captures behind BENCH_WIRE: each request packet to the server's port is
 * paired with the next packet back on the same connection. Captures are built here byte by byte as
 * tcpdump writes them for `lo` (pcap, Ethernet frames), since a real capture needs root and load.
 */

import { describe, expect, it } from 'vitest';
import { wireLatencies } from '../../../bench/lib/wire.js';

const SERVER = 8080;

interface Packet {
  /** Microseconds since the capture began (nanoseconds with `nano`). */
  readonly at: number;
  readonly from: number;
  readonly to: number;
  readonly ip?: 4 | 6;
  readonly protocol?: number;
}

function pcap(packets: readonly Packet[], options: { big?: boolean; nano?: boolean; link?: number } = {}): Buffer {
  const u32 = (value: number) => {
    const bytes = Buffer.alloc(4);
    if (options.big) bytes.writeUInt32BE(value);
    else bytes.writeUInt32LE(value);
    return bytes;
  };
  const header = Buffer.concat([
    u32(options.nano ? 0xa1b23c4d : 0xa1b2c3d4),
    Buffer.from(options.big ? [0, 2, 0, 4] : [2, 0, 4, 0]),
    u32(0),
    u32(0),
    u32(96),
    u32(options.link ?? 1),
  ]);
  const fraction = options.nano ? 1e9 : 1e6;
  const records = packets.map(({ at, from, to, ip = 4, protocol = 6 }) => {
    const ethernet = Buffer.alloc(14);
    ethernet.writeUInt16BE(ip === 4 ? 0x0800 : 0x86dd, 12);
    const network = Buffer.alloc(ip === 4 ? 20 : 40);
    if (ip === 4) {
      network[0] = 0x45;
      network[9] = protocol;
    } else {
      network[0] = 0x60;
      network[6] = protocol;
    }
    const tcp = Buffer.alloc(20);
    tcp.writeUInt16BE(from, 0);
    tcp.writeUInt16BE(to, 2);
    const frame = Buffer.concat([ethernet, network, tcp]);
    const seconds = Math.floor(at / fraction);
    return Buffer.concat([u32(seconds), u32(at - seconds * fraction), u32(frame.length), u32(frame.length), frame]);
  });
  return Buffer.concat([header, ...records]);
}

describe('wireLatencies', () => {
  it('pairs each request with the next answer on its own connection, across interleaved connections', () => {
    const capture = pcap([
      { at: 1_000_000, from: 50001, to: SERVER },
      { at: 1_000_100, from: 50002, to: SERVER },
      { at: 1_001_600, from: SERVER, to: 50002 },
      { at: 1_002_000, from: SERVER, to: 50001 },
      { at: 1_002_100, from: 50001, to: SERVER },
      { at: 1_005_100, from: SERVER, to: 50001 },
    ]);
    expect(Array.from(wireLatencies(capture, SERVER))).toEqual([1.5, 2, 3]);
  });

  it('times a request in two segments from its first, and skips the rest of a long answer', () => {
    const capture = pcap([
      { at: 0, from: 50001, to: SERVER },
      { at: 400, from: 50001, to: SERVER },
      { at: 1_000, from: SERVER, to: 50001 },
      { at: 1_200, from: SERVER, to: 50001 },
      // An answer seen before any request of its connection (the capture began mid-request).
      { at: 1_300, from: SERVER, to: 50009 },
    ]);
    expect(Array.from(wireLatencies(capture, SERVER))).toEqual([1]);
  });

  it('reads IPv6 frames, and leaves out other ports and other protocols', () => {
    const capture = pcap([
      { at: 0, from: 50001, to: SERVER, ip: 6 },
      { at: 100, from: 50003, to: 9999 },
      { at: 150, from: 50004, to: SERVER, protocol: 17 },
      { at: 200, from: 9999, to: 50003 },
      { at: 250, from: SERVER, to: 50004, protocol: 17 },
      { at: 2_500, from: SERVER, to: 50001, ip: 6 },
    ]);
    expect(Array.from(wireLatencies(capture, SERVER))).toEqual([2.5]);
  });

  it('reads big-endian files and nanosecond timestamps', () => {
    const packets = [
      { at: 3_000_000_000, from: 50001, to: SERVER },
      { at: 3_000_250_000, from: SERVER, to: 50001 },
    ];
    expect(Array.from(wireLatencies(pcap(packets, { nano: true }), SERVER))).toEqual([0.25]);
    const micro = packets.map((packet) => ({ ...packet, at: packet.at / 1000 }));
    expect(Array.from(wireLatencies(pcap(micro, { big: true }), SERVER))).toEqual([0.25]);
  });

  it('refuses what it cannot read rather than guessing', () => {
    expect(() => wireLatencies(Buffer.alloc(10), SERVER)).toThrow(/shorter than its header/);
    expect(() => wireLatencies(Buffer.alloc(24), SERVER)).toThrow(/unknown magic/);
    expect(() => wireLatencies(pcap([], { link: 113 }), SERVER)).toThrow(/link type 113/);
  });

  it('stops at a record cut short at the end of the file', () => {
    const whole = pcap([
      { at: 0, from: 50001, to: SERVER },
      { at: 1_000, from: SERVER, to: 50001 },
    ]);
    expect(Array.from(wireLatencies(whole.subarray(0, whole.length - 5), SERVER))).toEqual([]);
  });
});
