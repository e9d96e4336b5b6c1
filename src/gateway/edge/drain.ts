/**
 * Shutting the HTTP server down without losing an answer. Accept the connections the kernel had
 * already completed at the signal, then stop listening; answer every request whose bytes have
 * arrived, with `Connection: close` so its socket closes after it (one that arrived after the
 * signal gets 503 UNAVAILABLE: not carried out, safe to retry elsewhere); close the idle
 * keep-alive sockets only once nothing is in flight and nothing new has started for a moment (a
 * request already on the wire when the signal came is read in that moment); force what is left at
 * the grace period's end. A createPet whose POST went upstream thus gets its answer delivered, and
 * no client gets a reset connection for a request it had sent.
 */

import type { Server, ServerResponse } from 'node:http';
import net from 'node:net';

export interface Drain {
  /** True from the moment draining began: responses carry `Connection: close`, /ready answers 503. */
  readonly draining: boolean;
  /** Requests being answered now. */
  readonly inFlight: number;
  /** Counts a request in until its response is finished or its connection closed. */
  track(response: ServerResponse): void;
  /** Drains within `graceMs`; resolves, once every connection is closed, with what it did. */
  drain(graceMs: number): Promise<DrainReport>;
}

/** What a drain did, for the log line that says shutdown got this far. */
export interface DrainReport {
  /** Requests being answered when the drain began. */
  readonly inFlightAtSignal: number;
  /** Responses finished while draining (those in flight, and 503s to requests that came after). */
  readonly answered: number;
  /** Requests still unanswered at the end of the grace period, whose connections were closed. */
  readonly cut: number;
  readonly ms: number;
}

/** How long nothing new may start before idle sockets are closed: longer than reading a request already sent. */
const QUIET_MS = 250;
/**
 * Closing the listening socket resets every connection still in the kernel's accept queue: on a busy
 * replica, requests clients have already sent, who then cannot tell whether they were carried out
 * (17 of 20 createPets reset, the gateway stopped while they connected; 39 of 50 in a test on a
 * loaded machine). Node accepts one connection per turn of its event loop, so the queue the signal
 * found is accepted first: until as many connections as it held have been taken, or the queue
 * (read from /proc/net/tcp) is empty, within the grace period. However slow the turns, that is
 * progress, not a timer. Where the queue cannot be read, for ACCEPT_PENDING_MS (a timer, not
 * setImmediate: it fires only after a poll phase, the one that accepts).
 */
const ACCEPT_PENDING_MS = 50;

export interface DrainOptions {
  /** Connections waiting in the kernel's accept queue of the listening port; undefined where that cannot be read. */
  readonly acceptQueue?: (() => number | undefined) | undefined;
}

export function createDrain(server: Server, options: DrainOptions = {}): Drain {
  let draining = false;
  let inFlight = 0;
  // Responses being answered, in slots that are reused as they free up. Not a Set: a Set with an
  // add and a delete per request moves to a new table every few dozen requests, and once the
  // Set is in V8's old generation each new table is allocated there too. The table it replaces
  // is garbage but still points at the responses it held, and a minor GC treats such old-to-young
  // pointers as live. So every response, with its request and body, was promoted and left for a
  // full GC: 13% of the young generation survived each scavenge instead of 1.5%, scavenges took
  // 6.5 ms instead of 1, and there were 7 full GCs in 4 s instead of 1 (coalescing on, 32
  // connections). A slot set back to undefined leaves nothing behind.
  const answering: (ServerResponse | undefined)[] = [];
  const freeSlots: number[] = [];
  let lastStarted = 0;
  let settled: (() => void) | undefined;
  let answered = 0;

  /**
   * Waits until the connections queued at the signal are accepted (or dropped past
   * MAX_CONNECTIONS), the queue is empty, or `until`.
   */
  async function acceptPending(until: number): Promise<void> {
    const queued = options.acceptQueue?.();
    if (queued === undefined) return new Promise((resolve) => setTimeout(resolve, ACCEPT_PENDING_MS));
    let taken = 0;
    const take = () => void taken++;
    server.on('connection', take).on('drop', take);
    while (taken < queued && (options.acceptQueue?.() ?? 0) > 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    server.off('connection', take).off('drop', take);
  }

  return {
    get draining() {
      return draining;
    },
    get inFlight() {
      return inFlight;
    },
    track(response) {
      inFlight++;
      const slot = freeSlots.pop() ?? answering.length;
      answering[slot] = response;
      lastStarted = Date.now();
      if (draining) response.setHeader('Connection', 'close');
      // A response emits 'close' once, after 'finish' or when its connection goes first (on(), not
      // once(): no bound wrapper per request). The guard keeps a slot from being freed twice all the same.
      let closed = false;
      response.on('close', () => {
        if (closed) return;
        closed = true;
        if (draining && response.writableFinished) answered++;
        inFlight--;
        answering[slot] = undefined;
        freeSlots.push(slot);
        if (inFlight === 0) settled?.();
      });
    },
    async drain(graceMs) {
      const started = Date.now();
      if (draining) return { inFlightAtSignal: inFlight, answered: 0, cut: 0, ms: 0 };
      draining = true;
      const inFlightAtSignal = inFlight;
      // Answers still to be written close their connection after them.
      for (const response of answering) if (response?.headersSent === false) response.setHeader('Connection', 'close');
      const deadline = Date.now() + graceMs;
      await acceptPending(deadline);
      // Stop listening, as net.Server does: http.Server's own close() would also close every
      // connection it deems idle at once, and one whose request bytes have arrived but are not read
      // yet looks idle. Those are closed below, once nothing has started for a moment.
      const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
      // The quiet moment counts from the last accept, not the signal: a connection just accepted
      // has its request read in a later turn, and until then it looks idle.
      const stoppedListening = Date.now();
      while (
        Date.now() < deadline &&
        (inFlight > 0 || Date.now() - Math.max(stoppedListening, lastStarted) < QUIET_MS)
      ) {
        await new Promise<void>((resolve) => {
          settled = resolve;
          setTimeout(resolve, Math.min(QUIET_MS, Math.max(1, deadline - Date.now())));
        });
        settled = undefined;
      }
      server.closeIdleConnections();
      let cut = 0;
      const forced = setTimeout(
        () => {
          cut = inFlight;
          server.closeAllConnections();
        },
        Math.max(0, deadline - Date.now()),
      );
      await closed;
      clearTimeout(forced);
      return { inFlightAtSignal, answered, cut, ms: Date.now() - started };
    },
  };
}
