/**
 * Pet lookups by id: one DataLoader per request and API key, primed by every list response, whose
 * batch either scans `GET /pets` pages or calls the deprecated `GET /pets/{petId}` per id, as
 * `planLookup` decides. A scan ends: at the last page, at a page it has read before, at an empty
 * page that links on, at a link it will not follow, at the operation's budget, or when the client
 * leaves; an id it did not reach is an error that says why, never `null` (which would claim the pet
 * does not exist).
 */

import DataLoader from 'dataloader';
import type { PetLookup } from '../../config.js';
import { budgetExceeded, upstreamUnavailable } from '../errors.js';
import type { PetModel } from '../models.js';
import type { PetPage, RestClient } from '../rest/client.js';
import { canCharge, type Operation } from '../rest/operation.js';
import { type LookupStats, planLookup } from './lookup-plan.js';

export { GET_PET_SUNSET, type LookupStats } from './lookup-plan.js';

/** Page size of a scan: the largest the spec allows, so a scan costs as few requests as possible. */
export const SCAN_PAGE_SIZE = 100;

export interface PetLoaderOptions {
  /** The client bound to this request's operation. */
  readonly client: RestClient;
  readonly key: string;
  readonly operation: Operation;
  readonly strategy: PetLookup;
  readonly stats: LookupStats;
  readonly now: () => number;
  readonly maxBatchSize?: number;
  readonly onBatch?: (size: number) => void;
}

export type PetLoader = DataLoader<string, PetModel | null>;

/** One request's lookups: the loader, and the client the request lists pets through. */
export interface PetLookups {
  readonly loader: PetLoader;
  /**
   * `options.client`, except that every `listPets` page primes the loader, and a batch dispatched
   * while a page is in flight waits for it first: sibling fields such as `pets` and `pet(id:)` run
   * concurrently, and the list may carry the pet.
   */
  readonly client: RestClient;
}

export function createPetLookups(options: PetLoaderOptions): PetLookups {
  const { key, stats, operation } = options;
  // Every pet this request has had from the upstream; a batch answers these without asking again.
  const seen = new Map<string, PetModel>();
  const inFlight = new Set<Promise<PetPage>>();
  // Once a scan has read every page in this request, an id it did not find is absent.
  let scannedToEnd = false;

  // createRestClient returns a plain object, so spreading it keeps every other method.
  const client: RestClient = {
    ...options.client,
    listPets(pageKey, url) {
      const page = options.client.listPets(pageKey, url).then((result) => {
        for (const pet of result.pets) {
          seen.set(pet.id, pet);
          loader.prime(pet.id, pet);
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
    let page: URL | undefined = client.petsUrl({ limit: SCAN_PAGE_SIZE });
    let pages = 0;
    while (page !== undefined && wanted.size > 0) {
      if (read.has(page.href)) return upstreamUnavailable('the Pet Store linked back to a page already read');
      if (!canCharge(operation)) return budgetExceeded(operation.maxRequests, { spent: operation.charged });
      read.add(page.href);
      const result = await client.listPets(key, page);
      pages++;
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
      scannedToEnd = true;
      stats.fullScanPages = pages;
    }
    return undefined;
  }

  /** Looks each id up on its own; returns the failure of each id that could not be looked up. */
  async function fetchEach(ids: readonly string[]): Promise<Map<string, Error>> {
    const failures = new Map<string, Error>();
    const results = await Promise.allSettled(ids.map((id) => options.client.getPet(key, id)));
    results.forEach((result, i) => {
      if (result.status === 'rejected') failures.set(ids[i] as string, result.reason as Error);
      else if (result.value !== null) seen.set(result.value.id, result.value);
    });
    return failures;
  }

  const loader: PetLoader = new DataLoader(
    async (ids) => {
      options.onBatch?.(ids.length);
      // Sibling fields resolve concurrently: a list page of this request still in flight may carry these pets.
      while (inFlight.size > 0) await Promise.allSettled(inFlight);
      const missing = scannedToEnd ? [] : ids.filter((id) => !seen.has(id));
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
          const stopped = await scan(missing);
          if (stopped !== undefined) failures = new Map(missing.map((id) => [id, stopped]));
        }
      }
      // DataLoader would cache a failed id's error for the rest of the request; a later load asks again.
      for (const id of failures.keys()) loader.clear(id);
      return ids.map((id) => seen.get(id) ?? failures.get(id) ?? null);
    },
    { maxBatchSize: options.maxBatchSize ?? 1_000 },
  );
  return { loader, client };
}
