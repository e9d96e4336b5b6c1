/**
 * Starting the real entry point (`node --import tsx src/main.ts`) with trusted documents: a manifest
 * that is missing, not JSON, or lists a hash that is not its document's, and safelisting with no
 * manifest, each stop start-up with exactly one line on stderr naming PERSISTED_DOCUMENTS(_ONLY) and
 * exit code 1, never a stack trace; with graphql-codegen's manifest and PERSISTED_DOCUMENTS_ONLY=true
 * it starts, runs a document by id and refuses an unlisted one. The embedded reference store is the
 * upstream (no PETSTORE_BASE_URL), as `npm start` fronts it.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineFailure, MAIN, READY, ROOT, runToExit } from '../helpers/entry-point.js';
import { killTree, type Started, startUntil } from '../helpers/processes.js';

const MANIFEST = 'examples/client/__generated__/persisted-documents.json';

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
