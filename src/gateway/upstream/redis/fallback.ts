/**
 * A store shared by the replicas through Redis, with a local fallback: the rate-limit budget
 * (limits/shared-budget.ts) and the answer store (sharing/answers-redis.ts) both run on one. It says
 * where a call runs: on Redis while Redis answers, else locally, never as an error. Once lost, Redis
 * is asked again every `everyMs` (and at once when its connection says it is ready: a Cluster
 * stays "ready" through a failover, so the timer is what notices its end); when it answers, the
 * owner reconciles (`onBack`: what happened locally meanwhile is told to Redis), and only then do
 * calls go to Redis again. `epoch` changes at each move, so an owner can tell which side planned
 * something that is answered after a move.
 */

export interface FallbackOptions {
  readonly client: {
    readonly status: string;
    on(event: 'ready', listener: () => void): unknown;
    off(event: 'ready', listener: () => void): unknown;
  };
  /** A command that succeeds once Redis serves again (for a Cluster: on the slot that failed). */
  readonly probe: () => Promise<unknown>;
  /** Redis was lost: calls run locally from now on. */
  readonly onLost?: (error: unknown) => void;
  /** Redis answers again: reconcile; resolving moves calls back to Redis, throwing leaves them local. */
  readonly onBack?: () => Promise<void>;
  /** How often Redis is asked again while lost (default 250 ms). */
  readonly everyMs?: number;
}

export interface Fallback {
  /** `shared` while Redis serves; `local` while it does not, or when `shared` fails (which loses it). */
  run<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T>;
  /** Whether calls run locally now. */
  readonly lost: boolean;
  /** Changes at each move between Redis and the local side. */
  readonly epoch: number;
  /** Marks Redis lost without a failed call (a beat that failed, a start without Redis). */
  lose(error: unknown): void;
  close(): void;
}

export function createFallback(options: FallbackOptions): Fallback {
  const { client } = options;
  let lost = false;
  let epoch = 0;
  let timer: NodeJS.Timeout | undefined;
  let rejoining = false;
  let closed = false;

  function lose(error: unknown): void {
    if (lost || closed) return;
    lost = true;
    epoch++;
    options.onLost?.(error);
    timer ??= setInterval(() => void rejoin(), options.everyMs ?? 250);
    timer.unref();
  }

  async function rejoin(): Promise<void> {
    if (!lost || rejoining || closed || client.status !== 'ready') return;
    rejoining = true;
    try {
      await options.probe();
      await options.onBack?.();
      lost = false;
      epoch++;
      clearInterval(timer);
      timer = undefined;
    } catch {
      // Not yet: calls stay local, and the next probe tries again.
    } finally {
      rejoining = false;
    }
  }

  // One server and a Sentinel-found primary say "ready" when they reconnect.
  const onReady = () => void rejoin();
  client.on('ready', onReady);

  return {
    async run(shared, local) {
      if (!lost && client.status === 'ready') {
        try {
          return await shared();
        } catch (error) {
          lose(error);
        }
      } else if (!lost) {
        lose(new Error(`connection ${client.status}`));
      }
      return local();
    },
    get lost() {
      return lost;
    },
    get epoch() {
      return epoch;
    },
    lose,
    close() {
      closed = true;
      clearInterval(timer);
      client.off('ready', onReady);
    },
  };
}
