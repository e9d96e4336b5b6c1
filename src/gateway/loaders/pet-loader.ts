/**
 * Pet lookups by id (DESIGN.md section 5): one DataLoader per request and API key, primed by every
 * list response, whose batch either scans `GET /pets` pages (`list`) or calls the deprecated
 * `GET /pets/{petId}` per id (`legacy`), or picks the cheaper per batch (`auto`).
 */

import DataLoader from 'dataloader';
import type { PetLookup } from '../../config.js';
import type { PetModel } from '../models.js';
import type { PetPage, RestClient } from '../rest/client.js';

/** The deprecated endpoint's removal date (spec, Versioning): never called on or after it. */
export const GET_PET_SUNSET = Date.UTC(2030, 11, 5);

/** Page size of a scan: the largest the spec allows, so a scan costs as few requests as possible. */
export const SCAN_PAGE_SIZE = 100;

/** What `auto` learns across requests: how many pages the last scan to the end took. */
export interface LookupStats {
  fullScanPages: number | undefined;
}

export interface PetLoaderOptions {
  readonly client: RestClient;
  readonly key: string;
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
  const { key, stats } = options;
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

  async function scan(ids: readonly string[]): Promise<void> {
    const wanted = new Set(ids);
    let page: URL | undefined;
    let pages = 0;
    do {
      const result = await client.listPets(key, page ?? client.petsUrl({ limit: SCAN_PAGE_SIZE }));
      pages++;
      for (const pet of result.pets) wanted.delete(pet.id);
      page = result.next;
    } while (page !== undefined && wanted.size > 0);
    if (page === undefined) {
      scannedToEnd = true;
      stats.fullScanPages = pages;
    }
  }

  async function fetchEach(ids: readonly string[]): Promise<void> {
    const pets = await Promise.all(ids.map((id) => options.client.getPet(key, id)));
    for (const pet of pets) if (pet !== null) seen.set(pet.id, pet);
  }

  function useLegacy(ids: readonly string[]): boolean {
    if (options.now() >= GET_PET_SUNSET) return false;
    if (options.strategy === 'legacy') return true;
    if (options.strategy === 'list') return false;
    // auto: one request per id, against the pages of the last full scan (one when none is known yet).
    return ids.length < (stats.fullScanPages ?? 1);
  }

  const loader: PetLoader = new DataLoader(
    async (ids) => {
      options.onBatch?.(ids.length);
      // Sibling fields resolve concurrently: a list page of this request still in flight may carry these pets.
      while (inFlight.size > 0) await Promise.allSettled(inFlight);
      const missing = scannedToEnd ? [] : ids.filter((id) => !seen.has(id));
      // A failure rejects the whole batch, and DataLoader then forgets these ids: a later load asks again.
      if (missing.length > 0) await (useLegacy(missing) ? fetchEach(missing) : scan(missing));
      return ids.map((id) => seen.get(id) ?? null);
    },
    { maxBatchSize: options.maxBatchSize ?? 1_000 },
  );
  return { loader, client };
}
