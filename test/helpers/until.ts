/**
 * Polls `check` until it holds, every `everyMs`; throws naming `what` after `timeoutMs`. A check that
 * throws counts as not yet (a server still starting refuses connections).
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 20_000, everyMs = 100 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** A promise's state as seen now, without waiting for it. */
export function watch<T>(promise: Promise<T>): { settled: boolean; value?: T; error?: unknown } {
  const seen: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(seen, { settled: true, value }),
    (error: unknown) => Object.assign(seen, { settled: true, error }),
  );
  return seen;
}
