/** The demo catalogue `npm run petstore` and the embedded store start with. */

import type { Pet, PetStatus } from './store.js';

const NAMES = [
  'Rex',
  'Luna',
  'Milo',
  'Bella',
  'Otis',
  'Nala',
  'Ziggy',
  'Pepper',
  'Biscuit',
  'Mochi',
  'Juniper',
  'Hazel',
];
const STATUSES: PetStatus[] = ['available', 'available', 'pending', 'sold'];

/**
 * `count` pets with ids 1..count across four categories, plus one pet whose id is above 2^53 so a
 * client can see ids survive exactly (9007199254740993 is the first integer a double cannot hold).
 */
export function demoCatalogue(count = 120): Pet[] {
  const pets: Pet[] = [];
  for (let i = 1; i <= count; i++) {
    pets.push({
      id: BigInt(i),
      name: `${NAMES[(i - 1) % NAMES.length]} ${Math.ceil(i / NAMES.length)}`,
      categoryId: BigInt(((i - 1) % 4) + 1),
      status: STATUSES[(i - 1) % STATUSES.length] as PetStatus,
    });
  }
  pets.push({ id: 9007199254740993n, name: 'Big Id', categoryId: 9007199254740995n, status: 'available' });
  return pets;
}
