/**
 * `npm run bench:throughput`: this gateway side by side with REST direct, Tailcall and GraphQL Mesh,
 * printed as Markdown (docs/benchmarks.md quotes it). *One call* repeats one page of 20 pets (what
 * sharing requests in flight flatters), then the peak RSS while 200 connections send it; the
 * *distinct mix* (bench/lib/mix.ts) sends ~1,400 different pages in turn, on every target that
 * answers each page as the store does. The gateway runs as `npm start` runs it, with
 * PETSTORE_COALESCE=false, and asked by `documentId` (PERSISTED_DOCUMENTS); BENCH_NODE=<node> runs
 * it on another Node line. Rate limits are off: plumbing, not pacing (bench:limits measures that).
 * Servers under test on core 1, the store, wrk and this script on core 0. A warm-up, then
 * BENCH_ROUNDS runs interleaved across targets, each after BENCH_REWARM s of unmeasured load (V8
 * answers the first seconds after a pause slower); medians. A peer not set up is skipped with a note.
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { load, requireWrk, setting } from './lib/load.js';
import { checkMix, meanPageSize, walkMix } from './lib/mix.js';
import { meshSkipped, startMesh, startTailcall, tailcallSkipped } from './lib/peers.js';
import { LOAD_CORE, peakRss, pinSelf, rssMb, SERVER_CORE, stopAll } from './lib/processes.js';
import { BENCH_KEY, GATEWAY_NODE, startGateway, startStore } from './lib/servers.js';
import {
  gatewayTarget,
  meshTarget,
  ONE_CALL,
  type PageQuery,
  restTarget,
  send,
  type Target,
  tailcallTarget,
} from './lib/targets.js';
import { median, table } from './lib/text.js';

const [CONNECTIONS, WARMUP_S, DURATION_S, ROUNDS] = [
  setting('BENCH_CONNECTIONS', 32),
  setting('BENCH_WARMUP', 5),
  setting('BENCH_DURATION', 10),
  setting('BENCH_ROUNDS', 3),
];
const REWARM_S = setting('BENCH_REWARM', 2, 0);
const RSS_CONNECTIONS = 200;
const ROW = {
  rest: 'REST direct, `GET /v1/pets`',
  tailcallDedupe: 'Tailcall 1.0.0, `dedupe: true`',
  tailcall: 'Tailcall 1.0.0, no dedupe',
  gateway: 'this gateway, coalescing on (default)',
  gatewayOff: 'this gateway, `PETSTORE_COALESCE=false`',
  gatewayById: 'this gateway, by `documentId` (trusted documents)',
  mesh: 'Mesh v1 + Hive Gateway 2.15.1',
};

const began = performance.now();
const progress = (line: string): void =>
  void process.stderr.write(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

/** Once `target` answers the one-call request with 20 pets; throws after `timeoutMs`. */
async function answersOneCall(target: Target, timeoutMs = 30_000): Promise<void> {
  let last = '';
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    const answer = await send(target, target.request(ONE_CALL)).catch((error) => ({ text: String(error), body: 0 }));
    if (target.ids(answer.body)?.length === 20) return;
    last = answer.text.slice(0, 300);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${target.name} did not answer correctly: ${last}${target.log ? ` (log: ${target.log})` : ''}`);
}

/**
 * The gateway asked by `documentId`: each request the text target would send, its document replaced
 * by its SHA-256 id, and the manifest that lists them (written before the gateway starts).
 */
function byDocumentId(pages: readonly PageQuery[], dir: string) {
  const text = (page: PageQuery, form?: 'variables') =>
    gatewayTarget('', 'http://127.0.0.1/graphql', 0).request(page, form);
  const asId = (request: ReturnType<typeof text>) => {
    const { query, variables } = JSON.parse(request.body as string);
    const id = `sha256:${createHash('sha256').update(query).digest('hex')}`;
    return { id, query, request: { ...request, body: JSON.stringify({ documentId: id, variables }) } };
  };
  const manifest = join(dir, 'manifest.json');
  const listed = [asId(text(ONE_CALL)), ...pages.map((page) => asId(text(page, 'variables')))];
  writeFileSync(manifest, JSON.stringify(Object.fromEntries(listed.map(({ id, query }) => [id, query]))));
  const target = (url: string, pid: number): Target => {
    const base = gatewayTarget(ROW.gatewayById, url, pid);
    return { ...base, request: (page, form) => asId(base.request(page, form)).request };
  };
  return { manifest, target };
}

/** A row of a table: the medians over a target's measured runs. */
async function measure(
  name: string,
  targets: Target[],
  pages: (typeof ONE_CALL)[],
  store: { counts(): { requests: number; notOk: number } },
  dir: string,
) {
  const requests = (t: Target) => pages.map((page) => t.request(page, pages.length > 1 ? 'variables' : undefined));
  const run = (t: Target, seconds: number) => load(t, requests(t), { connections: CONNECTIONS, dir, seconds });
  for (const target of targets) {
    progress(`${name}: warm-up: ${target.name}`);
    await run(target, WARMUP_S);
  }
  const runs = targets.map(() => [] as number[][]);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, target] of targets.entries()) {
      if (REWARM_S > 0) await run(target, REWARM_S);
      const before = store.counts();
      const m = await run(target, DURATION_S);
      const after = store.counts();
      if (after.notOk > before.notOk)
        throw new Error(`${target.name}: the store refused ${after.notOk - before.notOk}`);
      const upstream = (after.requests - before.requests) / m.requests;
      runs[index]?.push([m.rps, m.p50Ms, m.p99Ms, (m.cpuS * 1000) / m.requests, upstream, m.errors]);
      progress(`${name}: round ${round}: ${target.name}: ${m.rps.toFixed(0)} req/s, p99 ${m.p99Ms.toFixed(2)} ms`);
      await answersOneCall(target, 5_000);
    }
  }
  return targets.map((target, index) => {
    const of = (column: number) => median((runs[index] ?? []).map((r) => r[column] as number));
    const errors = (runs[index] ?? []).reduce((sum, r) => sum + (r[5] as number), 0);
    return {
      target,
      rps: of(0),
      cells: [of(1).toFixed(2), of(2).toFixed(2), of(3).toFixed(3), of(4).toFixed(2), errors],
    };
  });
}

async function main(dir: string): Promise<string> {
  pinSelf(LOAD_CORE);
  const loadAtStart = loadavg().map((value) => value.toFixed(2));
  const notes: string[] = [];
  const store = await startStore();
  const targets: Target[] = [restTarget(ROW.rest, store.url, BENCH_KEY, store.pid)];
  const tailcall = tailcallSkipped(dir);
  for (const dedupe of tailcall === undefined ? [true, false] : []) {
    const peer = await startTailcall(SERVER_CORE, store.url, BENCH_KEY, dedupe, dir);
    targets.push(tailcallTarget(dedupe ? ROW.tailcallDedupe : ROW.tailcall, peer.url, peer.pid, peer.log));
  }
  progress('mix: walking every page through a gateway started for the walk');
  const pages = await walkMix(SERVER_CORE, store.url);
  const on = await startGateway(SERVER_CORE, store.url);
  const off = await startGateway(SERVER_CORE, store.url, { settings: { PETSTORE_COALESCE: 'false' } });
  const trusted = byDocumentId(pages, dir);
  const byId = await startGateway(SERVER_CORE, store.url, { settings: { PERSISTED_DOCUMENTS: trusted.manifest } });
  targets.push(gatewayTarget(ROW.gateway, on.url, on.pid), gatewayTarget(ROW.gatewayOff, off.url, off.pid));
  targets.push(trusted.target(byId.url, byId.pid));
  const mesh = meshSkipped() ?? (await startMesh(SERVER_CORE, store.url, BENCH_KEY, dir));
  if (typeof mesh !== 'string') targets.push(meshTarget(ROW.mesh, mesh.url, mesh.pid, mesh.log));
  notes.push(...[tailcall, mesh].filter((note): note is string => typeof note === 'string'));
  for (const target of targets) await answersOneCall(target);

  const rest = targets[0] as Target;
  const expected: string[][] = [];
  for (const page of pages) expected.push(rest.ids((await send(rest, rest.request(page))).body) ?? []);
  const able: Target[] = [];
  for (const target of targets) {
    const { mismatch, rounded } = await checkMix(target, pages, expected);
    if (mismatch === undefined) able.push(target);
    else notes.push(`Distinct mix: ${target.name} skipped: ${mismatch}`);
    if (rounded !== undefined) notes.push(`${target.name}: ${rounded}.`);
  }

  const oneCall = await measure('one call', targets, [ONE_CALL], store, dir);
  const mix = await measure('mix', able, pages, store, dir);
  for (const row of oneCall) {
    progress(`memory: ${RSS_CONNECTIONS} connections: ${row.target.name}`);
    if (row.target.pid === process.pid) {
      row.cells.push('–', '–'); // the store shares this process with the bench
      continue;
    }
    const idle = rssMb(row.target.pid);
    const run = () =>
      load(row.target, [row.target.request(ONE_CALL)], { dir, connections: RSS_CONNECTIONS, seconds: 5 });
    row.cells.push(idle.toFixed(0), (await peakRss(row.target.pid, run)).toFixed(0));
  }

  const head = ['target', 'req/s', 'p50 ms', 'p99 ms', 'server CPU ms/request', 'upstream calls/request', 'errors'];
  const rows = (of: typeof oneCall) =>
    of.map((r) => [r.target.name, Math.round(r.rps).toLocaleString('en'), ...r.cells]);
  const share = (of: typeof oneCall, ours: string, theirs: string) => {
    const [a, b] = [of.find((r) => r.target.name === ours), of.find((r) => r.target.name === theirs)];
    return a && b ? `${Math.round((a.rps / b.rps) * 100)}%` : 'n/a';
  };
  const ratio = (ours: string, theirs: string) =>
    `one call ${share(oneCall, ours, theirs)}, distinct mix ${share(mix, ours, theirs)}`;
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const gatewayNode = execFileSync(GATEWAY_NODE, ['--version'], { encoding: 'utf8' }).trim();
  const machine = `${model}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}, the gateways on Node ${gatewayNode}`;
  return [
    `Command: \`npm run bench\` (BENCH_CONNECTIONS=${CONNECTIONS} BENCH_WARMUP=${WARMUP_S} BENCH_REWARM=${REWARM_S} BENCH_DURATION=${DURATION_S} BENCH_ROUNDS=${ROUNDS})`,
    '',
    `Machine: ${machine}. Load average (1 / 5 / 15 min) ${loadAtStart.join(' / ')} at start, ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' / ')} at end.`,
    '',
    `Load: wrk, one thread, closed loop, ${CONNECTIONS} connections; per target ${WARMUP_S} s warm-up, then ${ROUNDS} × ${DURATION_S} s runs interleaved across targets, each after ${REWARM_S} s of unmeasured load; medians. Servers under test on core ${SERVER_CORE}, the store and wrk on core ${LOAD_CORE}. "server CPU" is the answering process's (REST direct: the store's).`,
    '',
    '**One call**: the same page of 20 pets every time:',
    '',
    table([...head, 'RSS idle MB', `peak RSS MB at ${RSS_CONNECTIONS} connections`], rows(oneCall)),
    '',
    `**Distinct mix**: ${pages.length.toLocaleString('en')} different pages in turn (sizes 1–100, no filter or one of three statuses, first pages and cursors; ${meanPageSize(expected).toFixed(1)} pets per page on average), GraphQL with variables:`,
    '',
    table(head, rows(mix)),
    '',
    `- this gateway's req/s as a share of Tailcall's, sharing off on both sides: ${ratio(ROW.gatewayOff, ROW.tailcall)}`,
    `- the same, sharing on on both sides: ${ratio(ROW.gateway, ROW.tailcallDedupe)}`,
    `- by \`documentId\` as a share of the same gateway asked by text: ${ratio(ROW.gatewayById, ROW.gateway)}`,
    `- this gateway's req/s, sharing off, as a share of Mesh's: ${ratio(ROW.gatewayOff, ROW.mesh)}; of REST direct: ${ratio(ROW.gatewayOff, ROW.rest)}`,
    ...notes.map((note) => `- ${note}`),
  ].join('\n');
}

requireWrk();
const dir = mkdtempSync(join(tmpdir(), 'bench-throughput-'));
try {
  process.stdout.write(`\n${await main(dir)}\n\n`);
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
// The store runs in this process: exit, and the 'exit' handler stops every child left.
process.exit(0);
