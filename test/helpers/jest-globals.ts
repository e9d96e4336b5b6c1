/**
 * `@jest/globals` for code written for Jest that runs here under vitest: Apollo's integration test
 * suite (`@apollo/server-integration-testsuite`) imports its test API from that module, and
 * vitest.config.ts points the import at this file.
 *
 * Vitest's API is Jest's with two differences that matter to that suite, both bridged here:
 * - Jest hands a function that declares a parameter a `done` callback; vitest hands it the test
 *   context (and rejects `done`). Such functions are run with a real `done` wrapped in a promise.
 * - `jest.fn` and `jest.spyOn` are `vi.fn` and `vi.spyOn`. Any other `jest.*` member throws, so a
 *   suite upgrade that starts using one fails loudly instead of running with a stand-in.
 */

import {
  describe,
  expect,
  afterAll as vAfterAll,
  afterEach as vAfterEach,
  beforeAll as vBeforeAll,
  beforeEach as vBeforeEach,
  it as vIt,
  vi,
} from 'vitest';

export { describe, expect };

type Callback = (...args: any[]) => unknown;

/** Jest's `done` style: a function with a parameter finishes when it calls `done()`, fails on `done(error)`. */
function jestStyle(fn: Callback): Callback {
  if (fn.length === 0) return fn;
  return () =>
    new Promise<void>((resolve, reject) => {
      const done = (error?: unknown) => (error === undefined || error === null ? resolve() : reject(error));
      done.fail = (error?: unknown) => reject(error instanceof Error ? error : new Error(String(error)));
      try {
        fn(done);
      } catch (error) {
        reject(error);
      }
    });
}

function hook(register: (fn: Callback, timeout?: number) => void) {
  return (fn: Callback, timeout?: number) => register(jestStyle(fn), timeout);
}

export const beforeAll = hook(vBeforeAll as (fn: Callback, timeout?: number) => void);
export const afterAll = hook(vAfterAll as (fn: Callback, timeout?: number) => void);
export const beforeEach = hook(vBeforeEach as (fn: Callback, timeout?: number) => void);
export const afterEach = hook(vAfterEach as (fn: Callback, timeout?: number) => void);

// `it.each`, `it.skip` and `it.only` keep vitest's own forms: `each` passes the table's values as
// arguments (not a `done`), which is what Jest does too.
export const it: typeof vIt = new Proxy(vIt, {
  apply(target, thisArg, [name, fn, timeout]: [string, Callback | undefined, number | undefined]) {
    return Reflect.apply(target, thisArg, [name, fn === undefined ? undefined : jestStyle(fn), timeout]);
  },
});
export const test = it;

export const jest = new Proxy({ fn: vi.fn, spyOn: vi.spyOn } as { fn: typeof vi.fn; spyOn: typeof vi.spyOn }, {
  get(target, name) {
    if (typeof name === 'symbol' || name in target) return Reflect.get(target, name);
    throw new Error(`jest.${String(name)} is not mapped onto vitest in test/helpers/jest-globals.ts`);
  },
});
