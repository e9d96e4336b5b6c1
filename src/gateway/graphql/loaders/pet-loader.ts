/**
 * Pet lookups by id: one DataLoader per request and API key, answered first from the request's own
 * list responses, whose batch either scans `GET /pets` pages or calls the deprecated
 * `GET /pets/{petId}` per id, as `planLookup` decides. A scan ends: at the last page, at a page it
 * has read before, at an empty page that links on, at a link it will not follow, at the
 * operation's budget, or when the client leaves; an id it did not reach is an error that says why,
 * never `null` (which would claim the pet does not exist). With a pet memory (PETSTORE_CACHE_TTL,
 * PETSTORE_STALE_TTL), what the key's list pages showed moments ago answers first, and its pets stand
 * in for a lookup that fails, while the key has not written since (pet-memory.ts).
 */

import DataLoader from 'dataloader';
import type { PetLookup } from '../../../config.js';
import type { PetPage, RestClient } from '../../upstream/client.js';
import { canCharge, type Operation } from '../../upstream/operation.js';
import type { Generation } from '../../upstream/response.js';
import { budgetExceeded, upstreamUnavailable } from '../errors.js';
import type { PetModel } from '../models.js';
import { type LookupStats, planLookup } from './cost.js';
import type { PetMemory } from './pet-memory.js';

export { GET_PET_SUNSET, type LookupStats } from './cost.js';

/** Page size of a scan: the largest the spec allows, so a scan costs as few requests as possible. */
export const SCAN_PAGE_SIZE = 100;

export interface PetLoaderOptions {
  /** The client bound to this request's operation. */
  readonly client: RestClient;
  readonly key: string;
  readonly keyId: string;
  readonly operation: Operation;
  readonly strategy: PetLookup;
  readonly stats: LookupStats;
  readonly now: () => number;
  /** What the key's list pages showed: served within `freshMs`, and within `staleMs` when a lookup fails. */
  readonly memory?: LearnedPets | undefined;
  readonly maxBatchSize?: number;
  readonly onBatch?: (size: number) => void;
}

export type PetLoader = DataLoader<string, PetModel | null>;

/** The pet memory, how old what it recalls may be, and how to read the key's write generation now. */
export interface LearnedPets {
  readonly pets: PetMemory;
  readonly freshMs: number;
  readonly staleMs: number;
  /** The key's write generation now: the memory answers only for what it learned under it. */
  generation(keyId: string): Promise<Generation>;
}

/** One request's lookups: the loader, and the client the request lists pets through. */
export interface PetLookups {
  readonly loader: PetLoader;
  /**
   * `options.client`, except that every `listPets` page is kept for the loader, and a batch dispatched
   * while a page is in flight waits for it first: sibling fields such as `pets` and `pet(id:)` run
   * concurrently, and the list may carry the pet.
   */
  readonly client: RestClient;
  /** How old the answer a loaded pet came from is, when it was an earlier one served stale. */
  staleMs(id: string): number | undefined;
}

/** Failures an earlier answer may stand in for: no budget in time, the upstream not answering. */
const STAND_IN_CODES = new Set(['RATE_LIMITED', 'UPSTREAM_UNAVAILABLE']);

export function createPetLookups(options: PetLoaderOptions): PetLookups {
  const { key, keyId, stats, operation, memory } = options;
  // Every pet this request has had from the upstream; a batch answers these without asking again.
  const seen = new Map<string, PetModel>();
  const ages = new Map<string, number>();
  // List pages not yet indexed into `seen`, in the order they came. Most requests list pets and
  // never look one up: indexing (and priming the loader with) every pet of every page cost about
  // 3.5 KB per request, so a page is indexed only when a lookup or a pet's age is asked for.
  const listed: PetPage[] = [];
  const inFlight = new Set<Promise<PetPage>>();
  // Once a scan has read every page in this request, an id it did not find is absent.
  let scannedToEnd = false;

  function index(pets: readonly PetModel[], staleMs: number | undefined): void {
    for (const pet of pets) {
      seen.set(pet.id, pet);
      if (staleMs === undefined) ages.delete(pet.id);
      else ages.set(pet.id, staleMs);
    }
  }

  /** Indexes the pages listed so far; before any read of `seen` or `ages`, so they hold what came, in order. */
  function absorb(): void {
    for (const page of listed) index(page.pets, page.staleMs);
    listed.length = 0;
  }

  function take(pets: readonly PetModel[], staleMs: number | undefined): void {
    absorb();
    index(pets, staleMs);
  }

  // createRestClient returns a plain object, so spreading it keeps every other method.
  const client: RestClient = {
    ...options.client,
    listPets(pageKey, url) {
      const page = options.client.listPets(pageKey, url).then((result) => {
        listed.push(result);
        if (result.staleMs === undefined && result.generation !== undefined) {
          memory?.pets.remember(keyId, result.pets, options.now(), result.generation);
        }
        return result;
      });
      inFlight.add(page);
      const settled = () => inFlight.delete(page);
      page.then(settled, settled);
      return page;
    },
  };

  /** Scans for `ids`; returns why it stopped short of the end, or undefined when it did not. */
  async function scan(ids: readonly string[]): Promise<Error | undefined> {
    const wanted = new Set(ids);
    const read = new Set<string>();
    const startedAt = options.now();
    // A page served stale (the upstream could not be asked) shows what was there, never what is not.
    let stale = false;
    // Pages asked under more than one generation straddle a write: no absence is learned from them.
    let oneGeneration = true;
    let generation: Generation | undefined;
    let page: URL | undefined = client.petsUrl({ limit: SCAN_PAGE_SIZE });
    let pages = 0;
    while (page !== undefined && wanted.size > 0) {
      if (read.has(page.href)) return upstreamUnavailable('the Pet Store linked back to a page already read');
      if (!canCharge(operation)) return budgetExceeded(operation.maxRequests, { spent: operation.charged });
      read.add(page.href);
      const result = await client.listPets(key, page);
      pages++;
      stale ||= result.staleMs !== undefined;
      oneGeneration &&= generation === undefined || result.generation === generation;
      generation ??= result.generation;
      for (const pet of result.pets) wanted.delete(pet.id);
      if (result.pets.length === 0 && result.next !== undefined) {
        return upstreamUnavailable('the Pet Store linked on from an empty page');
      }
      if (result.nextRefused && wanted.size > 0) {
        return upstreamUnavailable('the Pet Store linked its next page outside <base>/pets; the scan cannot go on');
      }
      page = result.next;
      // A page answered from the cache resolves at once: let the event loop breathe between pages.
      if (page !== undefined) await new Promise((resolve) => setImmediate(resolve));
    }
    if (page === undefined) {
      stats.fullScanPages = pages;
      if (stale) {
        // A stale null could not be marked stale, and would deny a pet created since.
        return wanted.size === 0
          ? undefined
          : upstreamUnavailable(
              'the Pet Store could not be asked, and earlier answers cannot tell that a pet does not exist',
            );
      }
      scannedToEnd = true;
      if (oneGeneration && generation !== undefined) memory?.pets.rememberComplete(keyId, startedAt, generation);
    }
    return undefined;
  }

  /** Looks each id up on its own; returns the failure of each id that could not be looked up. */
  async function fetchEach(ids: readonly string[]): Promise<Map<string, Error>> {
    const failures = new Map<string, Error>();
    const results = await Promise.allSettled(ids.map((id) => options.client.getPet(key, id)));
    results.forEach((result, i) => {
      if (result.status === 'rejected') failures.set(ids[i] as string, result.reason as Error);
      else if (result.value.pet !== null) take([result.value.pet], result.value.staleMs);
    });
    return failures;
  }

  /**
   * Ids the memory answers within `maxAgeMs` (their pet; or null for one known absent, unless the
   * answer is to stand in for a failed lookup), while the key's generation is still the one it learned under.
   */
  async function recall(
    ids: readonly string[],
    maxAgeMs: number,
    stale: boolean,
  ): Promise<Map<string, PetModel | null>> {
    const known = new Map<string, PetModel | null>();
    if (memory === undefined || maxAgeMs <= 0 || ids.length === 0 || !memory.pets.holds(keyId)) return known;
    // Read now, after this request began: a write the client saw answered has changed it already.
    const generation = await memory.generation(keyId);
    const now = options.now();
    for (const id of ids) {
      const recalled = memory.pets.recall(keyId, id, now, maxAgeMs, generation, !stale);
      if (recalled === undefined) continue;
      known.set(id, recalled.pet);
      if (recalled.pet !== null) take([recalled.pet], stale ? now - recalled.at : undefined);
    }
    return known;
  }

  const loader: PetLoader = new DataLoader(
    async (ids) => {
      absorb();
      // Ids a page of this request already listed are answered here, without a batch of their own.
      const asked = ids.filter((id) => !seen.has(id)).length;
      if (asked > 0) options.onBatch?.(asked);
      // Sibling fields resolve concurrently: a list page of this request still in flight may carry these pets.
      while (inFlight.size > 0) await Promise.allSettled(inFlight);
      absorb();
      const unseen = scannedToEnd ? [] : ids.filter((id) => !seen.has(id));
      const learned = await recall(unseen, memory?.freshMs ?? 0, false);
      const missing = unseen.filter((id) => !learned.has(id));
      let failures = new Map<string, Error>();
      if (missing.length > 0) {
        const plan = planLookup(missing.length, {
          strategy: options.strategy,
          stats,
          now: options.now(),
          maxRequests: operation.maxRequests,
        });
        if (plan.strategy === 'legacy') failures = await fetchEach(missing);
        else {
          // A failed page fails the whole batch; DataLoader then forgets these ids, so a later load asks again.
          const stopped = await scan(missing).catch((error: unknown) => error as Error);
          absorb();
          if (stopped !== undefined)
            failures = new Map(missing.filter((id) => !seen.has(id)).map((id) => [id, stopped]));
        }
      }
      // What failed for want of budget or of the upstream, what the key's pages showed recently stands in for.
      const standIns = await recall(
        [...failures].filter(([, error]) => STAND_IN_CODES.has(codeOf(error))).map(([id]) => id),
        memory?.staleMs ?? 0,
        true,
      );
      for (const id of standIns.keys()) failures.delete(id);
      // DataLoader would cache a failed id's error for the rest of the request; a later load asks again.
      for (const id of failures.keys()) loader.clear(id);
      absorb();
      return ids.map((id) => seen.get(id) ?? failures.get(id) ?? null);
    },
    { maxBatchSize: options.maxBatchSize ?? 1_000 },
  );
  return {
    loader,
    client,
    staleMs: (id) => {
      absorb();
      return ages.get(id);
    },
  };
}

function codeOf(error: Error): string {
  return String((error as { extensions?: { code?: unknown } }).extensions?.code ?? '');
}
