/**
 * /metrics carries the process's own health next to the gateway's metrics: prom-client's default
 * metrics (RSS, heap, event-loop lag, GC pauses), on the gateway's registry. Every metric of the
 * gateway's own is described in docs/operations.md.
 */

import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Stack, startStack } from '../helpers/start-stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

async function scrape(): Promise<string> {
  const response = await fetch(new URL('/metrics', stack.gateway.url));
  expect(response.status).toBe(200);
  return response.text();
}

/** The value of an unlabelled sample, or NaN when it is absent. */
function value(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

it('reports the process: resident memory, heap used, event-loop lag and GC pauses', async () => {
  expect((await stack.query('{ pets(first: 5) { nodes { id } } }')).body.errors).toBeUndefined();
  const text = await scrape();
  // Each present once, with a plausible value (a gateway uses tens of megabytes, at least).
  expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
  expect(value(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(1024 * 1024);
  expect(value(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  expect(text).toMatch(/^nodejs_heap_space_size_used_bytes\{space="old"\} \d+/m);
  expect(text).toMatch(/^# TYPE nodejs_gc_duration_seconds histogram$/m);
  for (const name of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
    expect(text.match(new RegExp(`^# TYPE ${name} `, 'gm'))).toHaveLength(1);
  }

  // A GC pause is recorded once one happens: make garbage until one is counted.
  const deadline = Date.now() + 10_000;
  let counted = 0;
  let garbage: unknown[] = [];
  while (counted === 0 && Date.now() < deadline) {
    for (let i = 0; i < 100_000; i++) garbage.push({ i });
    garbage = [];
    await new Promise((resolve) => setTimeout(resolve, 20));
    const matches = (await scrape()).matchAll(/^nodejs_gc_duration_seconds_count\{kind="\w+"\} (\d+)$/gm);
    counted = [...matches].reduce((sum, match) => sum + Number(match[1]), 0);
  }
  expect(counted).toBeGreaterThan(0);
});

it("names every one of the gateway's own metrics in docs/operations.md", async () => {
  const docs = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const names = [...(await scrape()).matchAll(/^# TYPE ((?:graphql|petstore)_\w+) /gm)].map((match) => match[1]);
  expect(names.length).toBeGreaterThan(15);
  expect(names.filter((name) => !docs.includes(`\`${name}`))).toEqual([]);
});
