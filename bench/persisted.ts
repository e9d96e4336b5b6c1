/**
 * `npm run bench:persisted`: the gateway's CPU per request for the throughput bench's one-call query
 * (`pets(first: 20)`), sent as its text and by `documentId` from a manifest, side by side against one
 * built gateway (dist/main.js, as `npm start` runs it) in front of the reference store (in this
 * process, so the store's CPU is not the gateway's). CPU per request is the gateway process's
 * utime + stime (/proc/<pid>/stat) over a round, divided by the round's requests; rounds of the two
 * forms are interleaved, and the medians reported. BENCH_ROUNDS, BENCH_REQUESTS, BENCH_CONCURRENCY tune it.
 */

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoCatalogue } from '../src/petstore/seed.js';
import { startPetstore } from '../src/petstore/start.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const KEY = 'bench-persisted-key-0123456789';
/** The one-call query as the throughput bench sends it to this gateway (bench/lib/targets.ts, literals). */
const QUERY = '{ pets(first: 20) { nodes { id name status } } }';
const HASH = createHash('sha256').update(QUERY, 'utf8').digest('hex');
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

const forms = {
  text: JSON.stringify({ query: QUERY }),
  documentId: JSON.stringify({ documentId: `sha256:${HASH}` }),
} as const;

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

async function send(url: string, body: string): Promise<void> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const answer = (await response.json()) as { data?: { pets?: { nodes?: unknown[] } } };
  if (answer.data?.pets?.nodes?.length !== 20) throw new Error(`unexpected answer: ${JSON.stringify(answer)}`);
}

/** `count` requests, `CONCURRENCY` at a time (closed loop); the gateway's CPU µs per request. */
async function round(url: string, pid: number, body: string, count: number): Promise<number> {
  const before = cpuMs(pid);
  let left = count;
  const worker = async () => {
    while (left-- > 0) await send(url, body);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return ((cpuMs(pid) - before) * 1000) / count;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const store = await startPetstore({ port: 0, seed: demoCatalogue(), keys: { [KEY]: { perMinute: 1e8, perDay: 1e9 } } });
const manifest = join(tmpdir(), `bench-persisted-${process.pid}.json`);
writeFileSync(manifest, JSON.stringify({ [`sha256:${HASH}`]: QUERY }));
const gateway = spawn(process.execPath, ['--max-old-space-size=256', 'dist/main.js'], {
  cwd: ROOT,
  env: {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    ...{ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', PERSISTED_DOCUMENTS: manifest },
    ...{ PETSTORE_BASE_URL: store.url, PETSTORE_API_KEY: KEY, PETSTORE_RATE_LIMITS: 'off' },
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    gateway.once('exit', (code) => reject(new Error(`the gateway exited with ${code}: ${out}`)));
    gateway.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const ready = / ready at (\S+)/.exec(out);
      if (ready?.[1]) resolve(ready[1]);
    });
  });
  gateway.stdout?.resume();
  const pid = gateway.pid as number;
  for (const body of Object.values(forms)) await round(url, pid, body, REQUESTS); // warm-up: JIT, pools
  const cpu = { text: [] as number[], documentId: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    // Interleaved, the order swapped every round, so drift (other processes, heap growth) falls on both.
    const order = (i % 2 === 0 ? ['text', 'documentId'] : ['documentId', 'text']) as (keyof typeof forms)[];
    for (const form of order) cpu[form].push(await round(url, pid, forms[form], REQUESTS));
  }
  console.log(`one-call query, ${ROUNDS} interleaved rounds of ${REQUESTS} requests, ${CONCURRENCY} at a time`);
  for (const [form, values] of Object.entries(cpu)) {
    const each = values.map((value) => value.toFixed(0)).join(' ');
    console.log(`${form.padEnd(10)} gateway CPU ${median(values).toFixed(0)} µs/request (median; rounds: ${each})`);
  }
  const ratios = cpu.documentId.map((value, i) => value / (cpu.text[i] as number));
  const each = ratios.map((ratio) => ratio.toFixed(2)).join(' ');
  console.log(`documentId / text, round by round: median ${median(ratios).toFixed(3)} (${each})`);
} finally {
  gateway.kill('SIGTERM');
  await store.close();
  rmSync(manifest, { force: true });
}
