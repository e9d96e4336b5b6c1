/**
 * What is in flight, by name, for names that come and go with the requests: shared executions
 * (shared-executions.ts) and shared GETs (rest/sharing.ts). A Map, copied into a new one every
 * few dozen names, for how V8 keeps a Map that sees an insert and a delete per request: it moves to
 * a new table every few dozen requests, and allocates that table in the old generation once the
 * Map's table is there (`OrderedHashTable::Rehash`). From then on every table it replaces is
 * garbage in the old generation that a scavenge still reads as live, so what the entries reach was
 * promoted and left for a full GC. With every request distinct and coalescing on, that was 31–40%
 * of what survived a scavenge promoted at the next (12% without the registration) and 4–6 full GCs
 * in 5 s instead of 1; with the copies, 13% and 2. A fresh copy starts in the young generation,
 * where replaced tables die young.
 */

/** Names inserted into one Map before it is copied: a few dozen requests, well inside a scavenge's interval. */
const COPY_EVERY = 64;

export class InFlight<V> {
  #entries = new Map<string, V>();
  #inserted = 0;

  get(name: string): V | undefined {
    return this.#entries.get(name);
  }

  set(name: string, value: V): void {
    if (++this.#inserted >= COPY_EVERY) {
      this.#inserted = 0;
      this.#entries = new Map(this.#entries);
    }
    this.#entries.set(name, value);
  }

  delete(name: string): void {
    this.#entries.delete(name);
  }

  /** Deletes every entry `drop` picks. */
  deleteWhere(drop: (name: string, value: V) => boolean): void {
    for (const [name, value] of this.#entries) if (drop(name, value)) this.#entries.delete(name);
  }
}
