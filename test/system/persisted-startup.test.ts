/**
 * Starting the real entry point (`node --import tsx src/main.ts`) with trusted documents: a manifest
 * that is missing, not JSON, or lists a hash that is not its document's, and safelisting with no
 * manifest, each stop start-up with exactly one line on stderr naming PERSISTED_DOCUMENTS(_ONLY) and
 * exit code 1, never a stack trace; with graphql-codegen's manifest and PERSISTED_DOCUMENTS_ONLY=true
 * it starts, runs a document by id and refuses an unlisted one. The embedded reference store is the
 * upstream (no PETSTORE_BASE_URL), as `npm start` fronts it; with no PERSISTED_DOCUMENTS the demo
 * serves the typed client example's manifest beside freeform documents, so the README's `npm start`
 * then `npm run example:client -- --persisted` works. Each says at start how many documents it
 * serves and whether safelisting is on.
 */

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineFailure, lines, MAIN, READY, ROOT, runToExit } from '../helpers/entry-point.js';
import { killTree, type Started, startUntil } from '../helpers/processes.js';

const MANIFEST = 'examples/client/__generated__/persisted-documents.json';
/** The start-up line about trusted documents, once whole. */
const DOCUMENTS_LINE = /^Persisted documents: .*\n/m;

/** The start-up lines about trusted documents. */
const documentsLines = (output: string) => lines(output).filter((line) => line.startsWith('Persisted documents:'));

/** `npm run example:client -- URL …` as the README runs it, through tsx as npm does. */
function exampleClient(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'examples/client/main.ts', ...args],
      { cwd: ROOT, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number | null) : 0, stdout, stderr }),
    );
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'persisted-startup-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('start-up with PERSISTED_DOCUMENTS', () => {
  let started: Started | undefined;
  afterEach(async () => {
    if (started) await killTree(started.pid);
    started = undefined;
  });

  it('stops with one line naming PERSISTED_DOCUMENTS when the file is missing', async () => {
    const path = join(dir, 'missing.json');
    const run = await runToExit({ PORT: '0', PERSISTED_DOCUMENTS: path });
    expectOneLineFailure(
      run,
      new RegExp(`^gateway: PERSISTED_DOCUMENTS names ${path}, which cannot be read \\(ENOENT\\)$`, 'm'),
    );
  }, 40_000);

  it('stops with one line naming PERSISTED_DOCUMENTS when the file is not JSON', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, '{ "sha256:');
    const run = await runToExit({ PORT: '0', PERSISTED_DOCUMENTS: path, PERSISTED_DOCUMENTS_ONLY: 'true' });
    expectOneLineFailure(run, /PERSISTED_DOCUMENTS names .*bad\.json, which is not valid JSON$/m);
  }, 40_000);

  it('stops with one line when the manifest lists a hash that is not its document’s', async () => {
    const path = join(dir, 'lying.json');
    await writeFile(path, JSON.stringify({ [`sha256:${'a'.repeat(64)}`]: '{ __typename }' }));
    const run = await runToExit({ PORT: '0', PERSISTED_DOCUMENTS: path });
    expectOneLineFailure(
      run,
      /PERSISTED_DOCUMENTS names .*lying\.json, which lists sha256:a+… for a document whose SHA-256 is/,
    );
  }, 40_000);

  it('stops with one line when PERSISTED_DOCUMENTS_ONLY=true has no manifest', async () => {
    const run = await runToExit({ PORT: '0', PERSISTED_DOCUMENTS_ONLY: 'true' });
    expectOneLineFailure(run, /^gateway: PERSISTED_DOCUMENTS_ONLY=true needs PERSISTED_DOCUMENTS/);
  }, 40_000);

  it("starts with graphql-codegen's manifest and safelisting on: an id runs, an unlisted query is refused", async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', PERSISTED_DOCUMENTS: MANIFEST, PERSISTED_DOCUMENTS_ONLY: 'true' },
      ready: DOCUMENTS_LINE,
      timeoutMs: 30_000,
    });
    expect(documentsLines(started.output())).toEqual([
      `Persisted documents: 4 documents from ${MANIFEST}; safelisting on (PERSISTED_DOCUMENTS_ONLY=true): no other document runs`,
    ]);
    const url = READY.exec(started.output())?.[1] as string;
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

  it('says with safelisting off how many documents it serves, and that freeform documents run too', async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', PERSISTED_DOCUMENTS: MANIFEST },
      ready: DOCUMENTS_LINE,
      timeoutMs: 30_000,
    });
    expect(documentsLines(started.output())).toEqual([
      `Persisted documents: 4 documents from ${MANIFEST}; safelisting off: freeform documents run too (PERSISTED_DOCUMENTS_ONLY=true refuses them)`,
    ]);
  }, 40_000);
});

describe('start-up of the embedded demo without PERSISTED_DOCUMENTS', () => {
  let started: Started | undefined;
  afterEach(async () => {
    if (started) await killTree(started.pid);
    started = undefined;
  });

  it("serves the typed client example's manifest beside freeform documents, says so, and example:client --persisted runs", async () => {
    started = await startUntil(process.execPath, MAIN, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0' },
      ready: DOCUMENTS_LINE,
      timeoutMs: 30_000,
    });
    expect(documentsLines(started.output())).toEqual([
      'Persisted documents: 4 documents of the typed client example (npm run example:client -- --persisted); freeform documents run too (demo only; set PERSISTED_DOCUMENTS for your own)',
    ]);
    const url = READY.exec(started.output())?.[1] as string;
    const persisted = await exampleClient(url, '--persisted');
    expect(persisted.stderr).toBe('');
    expect(persisted.code).toBe(0);
    expect(persisted.stdout).toMatch(/^Paged through 121 pets in 2 pages \(61 AVAILABLE, 30 PENDING, 30 SOLD\)\.\n/);
    // Not exclusive: the same client sending documents runs too.
    const freeform = await exampleClient(url);
    expect(freeform.stderr).toBe('');
    expect(freeform.code).toBe(0);
  }, 60_000);
});
