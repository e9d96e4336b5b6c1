/**
 * POSTs a body of a given size with node:http, the whole body written whatever the server answers
 * meanwhile, as a client that does not watch for an early answer does: what the client got is the
 * status read, or the socket error that came instead (EPIPE, ECONNRESET: the answer was lost).
 */

import { request } from 'node:http';

export function postLarge(url: string, bytes: number, headers: Record<string, string> = {}): Promise<string> {
  const body = Buffer.alloc(bytes, 'a');
  return new Promise((resolve) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(`status ${res.statusCode}`));
        res.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
    req.end(body);
  });
}

/** `runs` of postLarge one after another, counted by outcome. */
export async function postLargeRuns(
  runs: number,
  ...args: Parameters<typeof postLarge>
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < runs; i++) {
    const outcome = await postLarge(...args);
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  }
  return counts;
}
