/**
 * The measuring of `npm run bench:throughput`: a workload's warm-up and interleaved rounds, with
 * the store's request count around every run, and the memory phase.
 */

import { existsSync, readFileSync } from 'node:fs';
import { type LoadOptions, load, type Measurement, measure } from './load.js';
import { rssMb } from './processes.js';
import { median, percent } from './report.js';
import { type Served, storeCounts } from './servers.js';
import { type HttpRequest, type PageQuery, send, type Target } from './targets.js';

/** The same page of 20 pets every time: the one-call workload, and the health check between runs. */
export const ONE_CALL: PageQuery = { limit: 20 };

export interface Settings extends Omit<LoadOptions, 'seconds'> {
  readonly warmupS: number;
  /**
   * Unmeasured load right before each measured run. Between its runs a target waits while every
   * other target runs (over a minute with all peers), and the gateway answered the first one to two
   * seconds after such a pause at a third of its speed (V8 optimised 450–540 functions again in the
   * run after a minute's pause, 130–200 without one); without this, a run's p99 is that restart's,
   * not the server's under steady load.
   */
  readonly rewarmS: number;
  readonly durationS: number;
  readonly rounds: number;
  readonly progress: (line: string) => void;
}

export interface Workload {
  readonly name: string;
  readonly targets: readonly Target[];
  /** What the load tool sends to a target, in turn. */
  readonly requests: (target: Target) => readonly HttpRequest[];
}

/** Medians over the rounds of one target's runs. */
export interface Row {
  readonly target: Target;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** Share of one core the serving process used. */
  readonly busy: number;
  readonly cpuMsPerRequest: number;
  /** Requests the store served during a run over the requests the target answered. */
  readonly upstreamPerRequest: number;
  /** All rounds' errors together. */
  readonly errors: number;
  /** With BENCH_WIRE, the medians of p50 and p99 on the wire (bench/lib/wire.ts). */
  readonly wire?: { readonly p50: number; readonly p99: number };
}

/** True when `target` answers the one-call request with 20 pets. */
export async function answersOneCall(target: Target): Promise<{ ok: boolean; text: string }> {
  const { status, body, text } = await send(target, target.request(ONE_CALL));
  return { ok: status === 200 && target.ids(body)?.length === 20, text };
}

/** Waits until `target` answers the one-call request with 20 pets. */
export async function waitUntilServing(target: Target, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const answer = await answersOneCall(target);
      if (answer.ok) return;
      last = answer.text;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const log =
    target.log !== undefined && existsSync(target.log)
      ? `\nits log:\n${readFileSync(target.log, 'utf8').slice(-2000)}`
      : '';
  throw new Error(`${target.name} did not answer correctly within ${timeoutMs} ms: ${last.slice(0, 300)}${log}`);
}

/** Warm-up, then `rounds` measured runs interleaved across targets; a refused upstream request stops the bench. */
export async function runWorkload(workload: Workload, store: Served, settings: Settings): Promise<Row[]> {
  for (const target of workload.targets) {
    settings.progress(`${workload.name}: warm-up: ${target.name}`);
    await load(target, workload.requests(target), { ...settings, seconds: settings.warmupS });
  }
  const runs = workload.targets.map(() => [] as (Measurement & { upstream: number })[]);
  for (let round = 1; round <= settings.rounds; round++) {
    for (const [index, target] of workload.targets.entries()) {
      if (settings.rewarmS > 0)
        await load(target, workload.requests(target), { ...settings, seconds: settings.rewarmS });
      const before = await storeCounts(store.child);
      const m = await measure(target, workload.requests(target), { ...settings, seconds: settings.durationS });
      const after = await storeCounts(store.child);
      if (after.notOk > before.notOk) {
        throw new Error(`${target.name}: the store refused ${after.notOk - before.notOk} requests`);
      }
      runs[index]?.push({ ...m, upstream: after.requests - before.requests });
      const wire = m.wire ? `, on the wire p50 ${m.wire.p50Ms.toFixed(2)} ms, p99 ${m.wire.p99Ms.toFixed(2)} ms` : '';
      settings.progress(
        `${workload.name}: round ${round}: ${target.name}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50Ms.toFixed(2)} ms, p99 ${m.p99Ms.toFixed(2)} ms${wire}, CPU ${percent(m.cpuS / m.wallS)}, errors ${m.errors}`,
      );
      if (!(await answersOneCall(target)).ok) throw new Error(`${target.name} stopped answering correctly`);
    }
  }
  return workload.targets.map((target, index) => {
    const measured = runs[index] as (Measurement & { upstream: number })[];
    const wires = measured.flatMap((m) => (m.wire ? [m.wire] : []));
    return {
      target,
      rps: median(measured.map((m) => m.rps)),
      p50: median(measured.map((m) => m.p50Ms)),
      p99: median(measured.map((m) => m.p99Ms)),
      busy: median(measured.map((m) => m.cpuS / m.wallS)),
      cpuMsPerRequest: median(measured.map((m) => (m.cpuS * 1000) / m.requests)),
      upstreamPerRequest: median(measured.map((m) => m.upstream / m.requests)),
      errors: measured.reduce((sum, m) => sum + m.errors, 0),
      wire:
        wires.length > 0
          ? { p50: median(wires.map((w) => w.p50Ms)), p99: median(wires.map((w) => w.p99Ms)) }
          : undefined,
    };
  });
}

export interface Memory {
  readonly idle: number;
  readonly peak: number;
}

/** Idle and peak resident set (MB, sampled every 100 ms) of each target's process while `connections` send the one-call request. */
export async function memoryPhase(
  targets: readonly Target[],
  connections: number,
  seconds: number,
  settings: Settings,
): Promise<Map<Target, Memory>> {
  const memory = new Map<Target, Memory>();
  for (const target of targets) {
    settings.progress(`memory: ${connections} connections: ${target.name}`);
    const idle = rssMb(target.pid);
    let peak = idle;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(target.pid));
    }, 100);
    try {
      await load(target, [target.request(ONE_CALL)], { ...settings, seconds, connections });
    } finally {
      clearInterval(sampler);
    }
    memory.set(target, { idle, peak: Math.max(peak, rssMb(target.pid)) });
  }
  return memory;
}
