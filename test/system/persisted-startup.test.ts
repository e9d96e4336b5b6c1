/**
 * Starting the real entry point (`node --import tsx src/main.ts`) with trusted documents: a manifest
 * that is missing, not JSON, or lists a hash that is not its document's, and safelisting with no
 * manifest, each stop start-up with exactly one line on stderr naming PERSISTED_DOCUMENTS(_ONLY) and
 * exit code 1, never a stack trace; with graphql-codegen's manifest and PERSISTED_DOCUMENTS_ONLY=true
 * it starts, runs a document by id and refuses an unlisted one. The embedded reference store is the
 * upstream (no PETSTORE_BASE_URL), as `npm start` fronts it.
 */

import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkedPid, type Exit, killTree, type Started, startUntil, trackedEnv } from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = ['--import', 'tsx', 'src/main.ts'];
const READY = /Pet Store GraphQL gateway ready at (\S+)/;
const MANIFEST = 'examples/client/__generated__/persisted-documents.json';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'persisted-startup-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

interface Finished extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the entry point with only `env` (and PATH) until it exits; killed, and failing, after 30 s. */
async function runToExit(env: Record<string, string>): Promise<Finished> {
  const child = spawn(process.execPath, MAIN, {
    cwd: ROOT,
    env: trackedEnv({ PATH: process.env.PATH ?? '', PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = checkedPid(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const closed = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), 30_000);
  });
  const outcome = await Promise.race([closed, timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    await killTree(pid);
    throw new Error(`src/main.ts still running after 30 s:\n${stdout}${stderr}`);
  }
  return { ...outcome, stdout, stderr };
}

function expectOneLineFailure(run: Finished, names: RegExp): void {
  expect(run.code).toBe(1);
  expect(run.stderr.split('\n').filter((line) => line !== '')).toHaveLength(1);
  expect(run.stderr).toMatch(/^gateway: /);
  expect(run.stderr).toMatch(names);
  expect(`${run.stdout}${run.stderr}`).not.toMatch(/\n\s+at |Error:/);
  expect(run.stdout).not.toMatch(READY);
}

describe('start-up with PERSISTED_DOCUMENTS', () => {
  let started: Started | undefined;
  afterEach(async () => {
    if (started) await killTree(started.pid);
    started = undefined;
  });

  it('stops with one line naming PERSISTED_DOCUMENTS when the file is missing', async () => {
    const path = join(dir, 'missing.json');
    const run = await runToExit({ PERSISTED_DOCUMENTS: path });
    expectOneLineFailure(
      run,
      new RegExp(`^gateway: PERSISTED_DOCUMENTS names ${path}, which cannot be read \\(ENOENT\\)$`, 'm'),
    );
  }, 40_000);

  it('stops with one line naming PERSISTED_DOCUMENTS when the file is not JSON', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, '{ "sha256:');
    const run = await runToExit({ PERSISTED_DOCUMENTS: path, PERSISTED_DOCUMENTS_ONLY: 'true' });
    expectOneLineFailure(run, /PERSISTED_DOCUMENTS names .*bad\.json, which is not valid JSON$/m);
  }, 40_000);

  it('stops with one line when the manifest lists a hash that is not its document’s', async () => {
    const path = join(dir, 'lying.json');
    await writeFile(path, JSON.stringify({ [`sha256:${'a'.repeat(64)}`]: '{ __typename }' }));
    const run = await runToExit({ PERSISTED_DOCUMENTS: path });
    expectOneLineFailure(
      run,
      /PERSISTED_DOCUMENTS names .*lying\.json, which lists sha256:a+… for a document whose SHA-256 is/,
    );
  }, 40_000);

  it('stops with one line when PERSISTED_DOCUMENTS_ONLY=true has no manifest', async () => {
    const run = await runToExit({ PERSISTED_DOCUMENTS_ONLY: 'true' });
    expectOneLineFailure(run, /^gateway: PERSISTED_DOCUMENTS_ONLY=true needs PERSISTED_DOCUMENTS/);
  }, 40_000);

  it("starts with graphql-codegen's manifest and safelisting on: an id runs, an unlisted query is refused", async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', PERSISTED_DOCUMENTS: MANIFEST, PERSISTED_DOCUMENTS_ONLY: 'true' },
      ready: READY,
      timeoutMs: 30_000,
    });
    const url = started.ready[1] as string;
    const send = (body: unknown) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const byId = await send({
      documentId: 'sha256:eeeeb16fd652de61f0104aa7dc5beded3ed71b125d9dfba94f2ef0fef4153065',
      operationName: 'RateLimit',
    });
    expect(byId.status).toBe(200);
    expect(((await byId.json()) as { data: { rateLimit: { cost: number } } }).data.rateLimit.cost).toBe(0);
    const freeform = await send({ query: '{ pets { nodes { id } } }' });
    expect(freeform.status).toBe(403);
    expect(await freeform.json()).toEqual({
      errors: [
        {
          message: 'The operation body was not found in the persisted query safelist',
          extensions: { code: 'QUERY_NOT_IN_SAFELIST' },
        },
      ],
    });
  }, 40_000);
});
