/**
 * The distinct mix, a workload sharing cannot flatter: every page of the demo catalogue for every
 * size from 1 to 100 and status filter (and none), about 1,400 pages, shuffled with a fixed seed and
 * sent in turn. A later page goes on after the previous page's last pet: the gateway by its
 * endCursor, the others by `after` = that pet's id, as the store's `Link: rel="next"` says.
 */

import { stop } from './processes.js';
import { startGateway } from './servers.js';
import { gatewayTarget, type PageQuery, send, type Target } from './targets.js';

/** Runs `work` on every item, 8 at a time (quick, and not load), results in order. */
async function each<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i] as T);
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}

/** The mix, walked through a gateway of its own (a measured one would carry the walk's heap into its rows). */
export async function walkMix(core: string, storeUrl: string): Promise<PageQuery[]> {
  const walker = await startGateway(core, storeUrl);
  const target = gatewayTarget('walker', walker.url, walker.pid);
  const walks = [undefined, 'available', 'pending', 'sold'].flatMap((status) =>
    Array.from({ length: 100 }, (_, i) => ({ limit: i + 1, status })),
  );
  try {
    const walked = await each(walks, async ({ limit, status }) => {
      const pages: PageQuery[] = [{ limit, status }];
      for (;;) {
        const page = pages.at(-1) as PageQuery;
        const after = page.after ? `, after: ${JSON.stringify(page.after.cursor)}` : '';
        const filter = status ? `, status: ${status.toUpperCase()}` : '';
        const query = `{ pets(first: ${limit}${filter}${after}) { nodes { id } pageInfo { hasNextPage endCursor } } }`;
        const request = { ...target.request(page), body: JSON.stringify({ query }) };
        const { body, text } = await send(target, request);
        const pets = (body as any)?.data?.pets;
        const last = pets?.nodes?.at(-1)?.id;
        if (last === undefined || pets.pageInfo.endCursor === null)
          throw new Error(`mix: ${query}: ${text.slice(0, 300)}`);
        if (!pets.pageInfo.hasNextPage) return pages;
        if (pages.length === 1000) throw new Error(`mix: the walk of ${limit} ${status} does not end`);
        pages.push({ limit, status, after: { id: String(last), cursor: pets.pageInfo.endCursor } });
      }
    });
    return shuffle(walked.flat(), 20261122);
  } finally {
    await stop(walker.child);
  }
}

/** Fisher–Yates with a small seeded generator (mulberry32), so every run sends the same order. */
function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * Every page of the mix sent to `target` once, its ids compared with the store's (`expected`): a
 * target that cannot serve the mix fails here, not silently under load. Ids rounded to doubles are
 * the same pages: reported, not a mismatch.
 */
export async function checkMix(target: Target, mix: readonly PageQuery[], expected: readonly string[][]) {
  const answers = await each(mix, (page) => send(target, target.request(page, 'variables')));
  let rounded: string | undefined;
  for (const [i, { status, body, text }] of answers.entries()) {
    const want = expected[i] as string[];
    const ids = target.ids(body);
    if (status === 200 && ids?.join(',') === want.join(',')) continue;
    const asDoubles = (list: readonly string[]) => list.map((id) => String(Number(id))).join(',');
    if (status === 200 && ids !== undefined && asDoubles(ids) === asDoubles(want)) {
      const at = ids.findIndex((id, index) => id !== want[index]);
      rounded ??= `ids above 2^53 come back rounded (${want[at]} as ${ids[at]})`;
      continue;
    }
    return { mismatch: `${JSON.stringify(mix[i])}: HTTP ${status}, ${text.slice(0, 200)}`, rounded };
  }
  return { mismatch: undefined, rounded };
}

/** Pets per page, averaged over the mix. */
export const meanPageSize = (expected: readonly string[][]): number =>
  expected.reduce((sum, ids) => sum + ids.length, 0) / expected.length;
