/**
 * The distinct mix of `npm run bench:throughput`: a workload that sharing cannot flatter. Every
 * page of the demo catalogue, for every page size from 1 to 100 and every status filter (and none),
 * walked through the gateway's own cursors: about 1,400 different pages, shuffled with a fixed
 * seed, sent in turn, so that no two requests in flight are alike and each costs one upstream call.
 *
 * A page after the first continues after the previous page's last pet: the gateway through that
 * page's endCursor, REST, Tailcall and Mesh through `after` = that pet's id, which is what the
 * store's `Link: rel="next"` URL says (`/v1/pets?limit=L&status=S&after=ID`).
 */

import { stop } from './processes.js';
import { startGateway } from './servers.js';
import { type PageQuery, send, type Target } from './targets.js';

const PAGE_SIZES = Array.from({ length: 100 }, (_, index) => index + 1);
const STATUSES = [undefined, 'available', 'pending', 'sold'];
/** More pages than this in one walk is a loop, not the catalogue. */
const MAX_PAGES_PER_WALK = 1000;
/** Requests in flight at once while walking and checking: enough to be quick, few enough not to look like load. */
const CHECK_CONCURRENCY = 8;

/**
 * The mix, walked through a gateway started for the walk and stopped afterwards (a measured gateway
 * that had made the walk would carry its heap into its rows); its cursors are valid on every
 * gateway of the run (one CURSOR_SECRET).
 */
export async function walkMix(core: string, storeUrl: string): Promise<PageQuery[]> {
  const walker = await startGateway(core, storeUrl);
  return collectMix(new URL('/graphql', walker.url).href).finally(() => stop(walker.child));
}

/** Every page of every (size, status) through the gateway at `url`, several walks at a time. */
async function collectMix(url: string): Promise<PageQuery[]> {
  const walks = STATUSES.flatMap((status) => PAGE_SIZES.map((limit) => ({ limit, status })));
  const walked: PageQuery[][] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let index = next++; index < walks.length; index = next++) {
      walked[index] = await walk(url, walks[index] as { limit: number; status: string | undefined });
    }
  };
  await Promise.all(Array.from({ length: CHECK_CONCURRENCY }, worker));
  return shuffle(walked.flat(), 20261122);
}

/** Every page of one (size, status), first to last. */
async function walk(
  url: string,
  { limit, status }: { limit: number; status: string | undefined },
): Promise<PageQuery[]> {
  const pages: PageQuery[] = [];
  let after: PageQuery['after'];
  for (let walked = 0; ; walked++) {
    if (walked === MAX_PAGES_PER_WALK) throw new Error(`mix: the walk of limit ${limit} does not end`);
    pages.push({ limit, status, after });
    const page = await walkStep(url, { limit, status, after });
    if (!page.hasNextPage) return pages;
    after = { id: page.lastId, cursor: page.endCursor };
  }
}

interface Step {
  readonly hasNextPage: boolean;
  readonly endCursor: string;
  readonly lastId: string;
}

async function walkStep(url: string, page: PageQuery): Promise<Step> {
  const args = [`first: ${page.limit}`];
  if (page.status !== undefined) args.push(`status: ${page.status.toUpperCase()}`);
  if (page.after !== undefined) args.push(`after: ${JSON.stringify(page.after.cursor)}`);
  const query = `{ pets(${args.join(', ')}) { nodes { id } pageInfo { hasNextPage endCursor } } }`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as {
    data?: { pets: { nodes: { id: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
    errors?: unknown;
  };
  const pets = body.data?.pets;
  const last = pets?.nodes.at(-1);
  if (pets === undefined || body.errors !== undefined || last === undefined || pets.pageInfo.endCursor === null) {
    throw new Error(`mix: the gateway did not answer ${query}: ${JSON.stringify(body).slice(0, 300)}`);
  }
  return { hasNextPage: pets.pageInfo.hasNextPage, endCursor: pets.pageInfo.endCursor, lastId: last.id };
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

export interface MixCheck {
  /** The first page answered differently, or undefined when every page is the store's. */
  readonly mismatch?: string;
  /** Set when the only differences are ids above 2^53 rounded to the nearest double. */
  readonly rounded?: string;
}

/**
 * Sends every page of the mix to `target` once and compares the pets' ids with the store's own
 * answer (`expected`): a target that cannot express the mix fails here, not silently under load.
 * One that rounds int64 ids to doubles still serves the same pages: reported, not a mismatch.
 */
export async function checkMix(
  target: Target,
  mix: readonly PageQuery[],
  expected: readonly (readonly string[])[],
): Promise<MixCheck> {
  let rounded: string | undefined;
  for (let start = 0; start < mix.length; start += CHECK_CONCURRENCY) {
    const pages = mix.slice(start, start + CHECK_CONCURRENCY);
    const answers = await Promise.all(pages.map((page) => send(target, target.request(page, 'variables'))));
    for (const [offset, { status, body, text }] of answers.entries()) {
      const page = pages[offset] as PageQuery;
      const want = expected[start + offset] as readonly string[];
      const ids = target.ids(body);
      if (status === 200 && ids !== undefined && ids.join(',') === want.join(',')) continue;
      const asDoubles = (list: readonly string[]): string => list.map((id) => String(Number(id))).join(',');
      if (status === 200 && ids !== undefined && asDoubles(ids) === asDoubles(want)) {
        const index = ids.findIndex((id, at) => id !== want[at]);
        rounded ??= `ids above 2^53 come back rounded (${want[index]} as ${ids[index]})`;
        continue;
      }
      return {
        mismatch: `${JSON.stringify(page)}: HTTP ${status}, ${text.slice(0, 200)} (expected ids ${want.join(',')})`,
      };
    }
  }
  return rounded === undefined ? {} : { rounded };
}

/** Pets per page, averaged over the mix (the one-call workload asks for 20). */
export function meanPageSize(expected: readonly (readonly string[])[]): number {
  return expected.reduce((sum, ids) => sum + ids.length, 0) / expected.length;
}
