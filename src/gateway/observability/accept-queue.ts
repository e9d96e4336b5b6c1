/**
 * Connections waiting to be accepted on the gateway's listening port, read from Linux's
 * /proc/net/tcp and /proc/net/tcp6 when /metrics is scraped.
 *
 * Why a metric: since libuv 1.45 (Node 20 and 24) Node accepts one connection per turn of its event
 * loop (libuv 6c692ad, "unix: don't accept() connections in a loop"). A turn of a saturated gateway
 * takes 10–20 ms, so a burst of new connections waits in the kernel's accept queue, seconds for a
 * few hundred, before the gateway reads a byte of them; no timing taken inside the process sees it.
 * For a socket in LISTEN state the kernel prints that queue's length as `rx_queue`
 * (net/ipv4/tcp_ipv4.c, `get_tcp4_sock`; the same in tcp_ipv6.c), as `ss -ltn` shows it as Recv-Q.
 */

import { closeSync, openSync, readSync } from 'node:fs';

const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;
/** TCP_LISTEN in the kernel's `st` column. */
const LISTEN = '0A';
/** A whole line of a socket that is not listening: the listening sockets are all above it. */
const PAST_LISTENERS = /\n\s*\d+: \S+ \S+ (?!0A)[0-9A-F]{2} /;
const CHUNK_BYTES = 16 * 1024;

/**
 * The connections waiting on every socket listening on `port`, from the text of /proc/net/tcp and
 * /proc/net/tcp6 (`  sl  local_address rem_address   st tx_queue:rx_queue …`, hexadecimal). The
 * kernel lists a table's listening sockets first (`tcp_seq_next`: the listening hash, then the
 * established one), so a table is read up to its first socket in another state.
 */
export function acceptQueueOf(tables: readonly string[], port: number): number {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let waiting = 0;
  for (const table of tables) {
    for (const line of table.split('\n')) {
      const [slot, local, , state, queues] = line.trim().split(/\s+/);
      if (!slot?.endsWith(':')) continue; // the header, or not a line of the table
      if (state !== LISTEN) break;
      if (!local?.endsWith(hexPort) || queues === undefined) continue;
      const rx = Number.parseInt(queues.slice(queues.indexOf(':') + 1), 16);
      if (Number.isSafeInteger(rx)) waiting += rx;
    }
  }
  return waiting;
}

/**
 * A table's text up to its first socket that is not listening, or undefined when it cannot be read.
 * A host's table has a line per socket (150 bytes each, 15 MB for 100,000 connections); the
 * listening ones at its top are all a scrape needs, so it never reads and splits the rest.
 */
function listeningPart(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let text = '';
    for (;;) {
      const read = readSync(fd, chunk, 0, CHUNK_BYTES, null);
      if (read === 0) return text;
      text += chunk.toString('latin1', 0, read);
      if (PAST_LISTENERS.test(text)) return text;
    }
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads the accept queue of `port`, or is undefined where the kernel has no /proc/net/tcp (not
 * Linux). A table that cannot be read (tcp6 with IPv6 disabled) counts as empty. Synchronous, as
 * prom-client's process metrics read /proc: once per scrape, over the gateway's own network
 * namespace in a container, the host's otherwise.
 */
export function acceptQueueReader(
  read: (path: string) => string | undefined = listeningPart,
): ((port: number) => number) | undefined {
  if (read(TABLES[0]) === undefined) return undefined;
  return (port) =>
    acceptQueueOf(
      TABLES.map((path) => read(path) ?? ''),
      port,
    );
}
