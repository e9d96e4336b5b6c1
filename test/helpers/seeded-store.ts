/**
 * The reference Pet Store started on port 0 with numbered pets for its own tests, and the walk over
 * its Link headers that those tests share. Nothing is faked: the store is the real one.
 */

import { expect } from 'vitest';
import { type PetstoreHandle, startPetstore } from '../../src/petstore/start.js';
import type { Pet, PetStatus } from '../../src/petstore/store.js';
import { expectPets, type ParsedPet, type PetstoreClient, type StoreResponse } from './petstore-client.js';

/** An enterprise key: these tests send far more than a free plan's 60 requests a minute. */
export const KEY = 'integration-test-key';
export const STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold'];

/** Pets 1..count; statuses cycle available, pending, sold (so pet 3k is sold). */
export function seedPets(count: number): Pet[] {
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(i + 1),
    name: `Pet ${i + 1}`,
    categoryId: BigInt((i % 4) + 1),
    status: STATUSES[i % 3] as PetStatus,
  }));
}

export function startSeededStore(seed: Iterable<Pet>, extra: { maxBodyBytes?: number } = {}): Promise<PetstoreHandle> {
  return startPetstore({ keys: { [KEY]: 'enterprise' }, seed, ...extra });
}

/** The scheme://host:port the store's Link headers are built on. */
export function originOf(store: PetstoreHandle): string {
  return store.url.replace(/\/v1$/, '');
}

/** The target of a `Link: <…>; rel="next"` header, or undefined when there is none. */
export function nextLink(response: StoreResponse): string | undefined {
  const link = response.headers.get('link');
  if (link === null) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(match, `Link header ${link}`).not.toBeNull();
  return match?.[1];
}

/** Follows rel="next" from `path` to the last page; returns every page's pets and the links followed. */
export async function walkPages(
  client: PetstoreClient,
  path: string,
): Promise<{ pages: ParsedPet[][]; links: string[] }> {
  const pages: ParsedPet[][] = [];
  const links: string[] = [];
  let target: string | undefined = path;
  while (target !== undefined) {
    const response = await client.get(target);
    pages.push(expectPets(response));
    target = nextLink(response);
    if (target !== undefined) links.push(target);
    expect(pages.length).toBeLessThan(200);
  }
  return { pages, links };
}

export function ids(pets: readonly ParsedPet[]): bigint[] {
  return pets.map((pet) => pet.id);
}

export function range(from: number, to: number): bigint[] {
  return Array.from({ length: to - from + 1 }, (_, i) => BigInt(from + i));
}
