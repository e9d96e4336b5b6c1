/**
 * Latency on the wire (BENCH_WIRE=true): each request's packet to the server's port paired with the
 * server's next packet back on the same connection, as tcpdump captures them on loopback during a
 * measured run. It is what the server delivers, the time a request waits in its socket included,
 * and leaves out the load tool's own: with sharing, the ~32 answers of one execution leave together,
 * and wrk's one thread reads them one after another on the core it shares with the store, so its
 * p99 carries a queue of its own ("The tail with sharing" in the README).
 *
 * Only packets that carry PSH are captured (a request or an answer each fits one segment on
 * loopback), and a capture the kernel dropped packets from is refused, since a lost packet would
 * pair a request with the wrong answer.
 */

import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isRunning, LOAD_CORE, pinned, stop } from './processes.js';

export interface WireLatency {
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Requests paired with an answer. */
  readonly requests: number;
}

export interface Capture {
  /** Stops tcpdump and reads its file: the latencies of the requests it saw answered. */
  stop(): Promise<WireLatency>;
}

/** Starts tcpdump on loopback for `port`, pinned with the load tool, writing `file`; resolves once it listens. */
export async function startCapture(port: number, file: string): Promise<Capture> {
  const filter = `tcp port ${port} and (tcp[tcpflags] & tcp-push != 0)`;
  // tcpdump shares the load core with the store and wrk, so it runs niced, to take what they leave
  // rather than slow the GET a shared execution waits for; its 256 MB buffer holds a whole run's
  // packets (a run at 35,000 req/s is 700,000) while it catches up. -s: the headers only.
  const args = ['-i', 'lo', '-B', '262144', '-s', '64', '-n', '-w', file, filter];
  const child = pinned(LOAD_CORE, 'tcpdump', args, { stdio: ['ignore', 'ignore', 'pipe'] }, ['nice', '-n', '19']);
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log += chunk.toString('utf8');
  });
  // It says so on stderr once its filter is in place; a capture started earlier would miss requests.
  while (!log.includes('listening on')) {
    if (!isRunning(child)) throw new Error(`tcpdump exited (BENCH_WIRE wants tcpdump, as root): ${log.trim()}`);
    await sleep(20);
  }
  return {
    async stop() {
      // On SIGTERM tcpdump closes its file and prints its counts, which may still be on their way
      // through the pipe once it has exited.
      await stop(child);
      if (child.stderr && !child.stderr.closed) await once(child.stderr, 'close');
      const dropped = Number(/(\d+) packets? dropped by kernel/.exec(log)?.[1] ?? Number.NaN);
      if (dropped !== 0)
        throw new Error(
          `tcpdump: ${Number.isNaN(dropped) ? 'no drop count' : `${dropped} packets dropped`}: ${log.trim()}`,
        );
      const latencies = wireLatencies(readFileSync(file), port);
      rmSync(file, { force: true });
      return { p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), requests: latencies.length };
    },
  };
}

/** The q-quantile of sorted `values` (nearest rank), NaN for none. */
function quantile(values: Float64Array, q: number): number {
  if (values.length === 0) return Number.NaN;
  return values[Math.min(values.length - 1, Math.ceil(q * values.length) - 1)] as number;
}

const ETHERNET = 1;
const IPV4 = 0x0800;
const IPV6 = 0x86dd;
const TCP = 6;

/**
 * The milliseconds from each request packet (to `port`) to the next packet back from `port` on the
 * same connection, sorted, from a pcap file of Ethernet frames (what tcpdump writes for `lo`). A
 * second request packet before the answer (a request in two segments) keeps the first one's time;
 * an answer with no request waiting (the rest of a long one) is skipped.
 */
export function wireLatencies(pcap: Buffer, port: number): Float64Array {
  if (pcap.length < 24) throw new Error('pcap: shorter than its header');
  const magic = pcap.readUInt32LE(0);
  const little = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  const big = pcap.readUInt32BE(0) === 0xa1b2c3d4 || pcap.readUInt32BE(0) === 0xa1b23c4d;
  if (!little && !big) throw new Error(`pcap: unknown magic ${magic.toString(16)}`);
  const u32 = (at: number) => (little ? pcap.readUInt32LE(at) : pcap.readUInt32BE(at));
  const fractionPerSecond = (little ? magic : pcap.readUInt32BE(0)) === 0xa1b23c4d ? 1e9 : 1e6;
  const link = u32(20);
  if (link !== ETHERNET) throw new Error(`pcap: link type ${link}, not Ethernet`);
  const waiting = new Map<number, number>();
  const latencies: number[] = [];
  for (let at = 24; at + 16 <= pcap.length; ) {
    const ms = u32(at) * 1000 + (u32(at + 4) * 1000) / fractionPerSecond;
    const captured = u32(at + 8);
    const frame = at + 16;
    at = frame + captured;
    if (at > pcap.length) break;
    const ports = tcpPorts(pcap, frame, captured);
    if (ports === undefined) continue;
    const [source, destination] = ports;
    if (destination === port) {
      if (!waiting.has(source)) waiting.set(source, ms);
    } else if (source === port) {
      const sent = waiting.get(destination);
      if (sent === undefined) continue;
      latencies.push(ms - sent);
      waiting.delete(destination);
    }
  }
  return Float64Array.from(latencies).sort();
}

/** The TCP source and destination ports of an Ethernet frame, or undefined for anything else. */
function tcpPorts(pcap: Buffer, frame: number, captured: number): [number, number] | undefined {
  if (captured < 14) return undefined;
  const etherType = pcap.readUInt16BE(frame + 12);
  let tcp: number;
  if (etherType === IPV4) {
    if (captured < 14 + 20 || pcap[frame + 14 + 9] !== TCP) return undefined;
    tcp = frame + 14 + ((pcap[frame + 14] as number) & 0x0f) * 4;
  } else if (etherType === IPV6) {
    // No extension headers on loopback TCP: the next header is TCP or the packet is not ours.
    if (captured < 14 + 40 || pcap[frame + 14 + 6] !== TCP) return undefined;
    tcp = frame + 14 + 40;
  } else {
    return undefined;
  }
  if (tcp + 4 > frame + captured) return undefined;
  return [pcap.readUInt16BE(tcp), pcap.readUInt16BE(tcp + 2)];
}
