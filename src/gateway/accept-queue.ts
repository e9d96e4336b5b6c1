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

import { readFileSync } from 'node:fs';

const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;
/** TCP_LISTEN in the kernel's `st` column. */
const LISTEN = '0A';

/**
 * The connections waiting on every socket listening on `port`, from the text of /proc/net/tcp and
 * /proc/net/tcp6 (`  sl  local_address rem_address   st tx_queue:rx_queue …`, hexadecimal).
 */
export function acceptQueueOf(tables: readonly string[], port: number): number {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let waiting = 0;
  for (const table of tables) {
    for (const line of table.split('\n')) {
      const [, local, , state, queues] = line.trim().split(/\s+/);
      if (state !== LISTEN || !local?.endsWith(hexPort) || queues === undefined) continue;
      const rx = Number.parseInt(queues.slice(queues.indexOf(':') + 1), 16);
      if (Number.isSafeInteger(rx)) waiting += rx;
    }
  }
  return waiting;
}

/**
 * Reads the accept queue of `port`, or is undefined where the kernel has no /proc/net/tcp (not
 * Linux). A table that cannot be read (tcp6 with IPv6 disabled) counts as empty. Synchronous, as
 * prom-client's process metrics read /proc: once per scrape, over the sockets of the gateway's own
 * network namespace in a container.
 */
export function acceptQueueReader(
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): ((port: number) => number) | undefined {
  const readable = (path: string): string | undefined => {
    try {
      return read(path);
    } catch {
      return undefined;
    }
  };
  if (readable(TABLES[0]) === undefined) return undefined;
  return (port) =>
    acceptQueueOf(
      TABLES.map((path) => readable(path) ?? ''),
      port,
    );
}
