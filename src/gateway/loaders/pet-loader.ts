/**
 * Pet lookups by id (DESIGN.md section 5): one DataLoader per request and API key, primed by every
 * list response, whose batch either scans `GET /pets` pages (`list`) or calls the deprecated
 * `GET /pets/{petId}` per id (`legacy`), or picks the cheaper per batch (`auto`).
 */

import DataLoader from 'dataloader';
import type { PetLookup } from '../../config.js';
import type { PetModel } from '../models.js';
import type { RestClient } from '../rest/client.js';

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
}

export type PetLoader = DataLoader<string, PetModel | null>;

export function createPetLoader(options: PetLoaderOptions): PetLoader {
  const { client, key, stats } = options;
  // Once a scan has read every page in this request, an id it did not find is absent.
  let scannedToEnd = false;

  async function scan(ids: readonly string[]): Promise<Map<string, PetModel>> {
    const wanted = new Set(ids);
    const found = new Map<string, PetModel>();
    if (scannedToEnd) return found;
    let page: URL | undefined;
    let pages = 0;
    do {
      const result = await client.listPets(key, page ?? client.petsUrl({ limit: SCAN_PAGE_SIZE }));
      pages++;
      for (const pet of result.pets) {
        if (wanted.delete(pet.id)) found.set(pet.id, pet);
        else loader.prime(pet.id, pet);
      }
      page = result.next;
    } while (page !== undefined && wanted.size > 0);
    if (page === undefined) {
      scannedToEnd = true;
      stats.fullScanPages = pages;
    }
    return found;
  }

  async function fetchEach(ids: readonly string[]): Promise<Map<string, PetModel>> {
    const pets = await Promise.all(ids.map((id) => client.getPet(key, id)));
    return new Map(pets.filter((pet): pet is PetModel => pet !== null).map((pet) => [pet.id, pet]));
  }

  function useLegacy(ids: readonly string[]): boolean {
    if (options.now() >= GET_PET_SUNSET) return false;
    if (options.strategy === 'legacy') return true;
    if (options.strategy === 'list') return false;
    // auto: one request per id, against the pages of the last full scan (one when none is known yet).
    return ids.length < (scannedToEnd ? 0 : (stats.fullScanPages ?? 1));
  }

  const loader: PetLoader = new DataLoader(
    async (ids) => {
      // A failure rejects the whole batch, so DataLoader does not cache it as an answer for these ids.
      const found = useLegacy(ids) ? await fetchEach(ids) : await scan(ids);
      return ids.map((id) => found.get(id) ?? null);
    },
    { maxBatchSize: options.maxBatchSize ?? 1_000 },
  );
  return loader;
}
