/**
 * What one Redis core carries of the budget, driven as the gateway drives it: two replicas (two
 * ioredis connections, RedisBudget as src/ runs it), each with many requests in flight, on 1,000
 * keys, a plan in force that is never reached. Each upstream request is a reservation and its
 * answer (with rate-limit headers, room asked for). Run by bench/cost.ts part 3 on the core Redis
 * does not use: `tsx bench/redis-capacity.ts <redis url> <redis pid> <seconds> [checkout]`, where
 * checkout is another build's folder (its src/ is measured instead, for a side-by-side).
 * Prints JSON: upstream requests/s reached, Redis CPU µs per request, Redis's CPU use (share of a core).
 */

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { RedisBudget } from '../src/gateway/upstream/limits/redis-budget.js';
import { cpuSeconds } from './lib/processes.js';

const [url, pid, seconds, checkout = resolve(import.meta.dirname, '..')] = process.argv.slice(2);
const KEYS = 1_000;
const IN_FLIGHT = 64;
const PLAN = { windows: [{ count: 1_000_000, windowMs: 60_000 }], share: 1 };

const module = pathToFileURL(resolve(checkout, 'src/gateway/upstream/limits/redis-budget.ts')).href;
const { RedisBudget: Budget } = (await import(module)) as { RedisBudget: typeof RedisBudget };
const clients = [new Redis(url as string), new Redis(url as string)];
const budgets = clients.map(
  (client, i) => new Budget({ client, prefix: 'capacity', tag: `r${i}`, inflightMs: 30_000, channel: 'capacity:c' }),
);

let done = 0;
let until = 0;
async function replica(budget: RedisBudget): Promise<void> {
  while (performance.now() < until) {
    const key = `k${Math.floor(Math.random() * KEYS)}`;
    const planned = await budget.reserve(key, PLAN, Date.now());
    if (!planned.ok) continue;
    const now = Date.now();
    const word = { limit: 1_000_000, remaining: 999_000, resetAt: now + 60_000 };
    await budget.answer(key, planned.seq, { status: 200, word, retryAfterMs: undefined, jitter: 0.5 }, now, PLAN, true);
    done++;
  }
}

const run = async (ms: number) => {
  until = performance.now() + ms;
  await Promise.all(budgets.flatMap((budget) => Array.from({ length: IN_FLIGHT }, () => replica(budget))));
};
await run(1_000); // warm-up: scripts loaded, keys made
done = 0;
const cpuBefore = cpuSeconds(Number(pid));
const startedAt = performance.now();
await run(Number(seconds) * 1_000);
const wall = (performance.now() - startedAt) / 1_000;
const cpu = cpuSeconds(Number(pid)) - cpuBefore;
for (const client of clients) client.disconnect();
console.log(JSON.stringify({ requests: done, perSecond: done / wall, cpuUs: (cpu * 1e6) / done, busy: cpu / wall }));
