/**
 * Trusted documents (PERSISTED_DOCUMENTS, PERSISTED_DOCUMENTS_ONLY) against a reference store and a
 * gateway on port 0: a listed document runs by `documentId` (with or without `sha256:`) or by
 * Apollo's APQ hash, by POST and GET, exactly as its text would (same data, cost, limits, dry run,
 * shared executions); an unknown id is PERSISTED_QUERY_NOT_IN_LIST; with ONLY, an unlisted freeform
 * document is QUERY_NOT_IN_SAFELIST and APQ registration is off. Every refusal sends nothing
 * upstream, never reaches Apollo Server (graphql_operations_total, which counts every response it
 * writes, parse failures included, does not move) and logs nothing of the request.
 *
 * The manifest is the typed client's own (examples/client/__generated__/persisted-documents.json)
 * plus a few documents of this test's, hashed here, written to a scratch file.
 */

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExample } from '../../../examples/client/main.js';
import { createLogger } from '../../../src/gateway/observability/logger.js';
import { demoCatalogue } from '../../../src/petstore/seed.js';
import { errorCodes, type GqlResponse } from '../../helpers/gql.js';
import { type Stack, startStack } from '../../helpers/start-stack.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const apq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

const PETS = 'query Pets2 { pets(first: 2) { nodes { id name } } }';
const RATE = 'query Rate($dryRun: Boolean) { rateLimit(dryRun: $dryRun) { cost } }';
const CREATE = 'mutation Create { createPet(input: { name: "Rex", categoryId: "1" }) { pet { id } } }';
/** 101 aliases: over MAX_ALIASES (100), refused by validation whether sent by id or as text. */
const ALIASED = `query Aliased { ${Array.from({ length: 101 }, (_, i) => `a${i}: rateLimit { cost }`).join(' ')} }`;
/** 30 pets fields: over one operation's share of 100/1m (25), refused by the estimate. */
const COSTLY = `query Costly { ${Array.from({ length: 30 }, (_, i) => `p${i}: pets(first: 1) { nodes { id } }`).join(' ')} }`;
const OURS = [PETS, RATE, CREATE, ALIASED, COSTLY];

let dir: string;
let manifestPath: string;
let clientManifest: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trusted-documents-'));
  manifestPath = join(dir, 'persisted-documents.json');
  const client = new URL('../../../examples/client/__generated__/persisted-documents.json', import.meta.url);
  clientManifest = JSON.parse(await readFile(client, 'utf8'));
  const manifest = { ...clientManifest, ...Object.fromEntries(OURS.map((doc) => [`sha256:${sha256(doc)}`, doc])) };
  await writeFile(manifestPath, JSON.stringify(manifest, null, 2));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function post(stack: Stack, body: Record<string, unknown>): Promise<GqlResponse> {
  const response = await fetch(stack.gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as GqlResponse['body'] };
}

async function get(stack: Stack, params: Record<string, string>): Promise<GqlResponse> {
  const url = new URL(stack.gateway.url);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  // A header that forces a preflight: Apollo Server's CSRF prevention wants one on a GET.
  const response = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
  return { status: response.status, headers: response.headers, body: (await response.json()) as GqlResponse['body'] };
}

/** The value of one series of /metrics (0 when absent), or the sum of every series of a name when `sum`. */
async function metric(stack: Stack, series: string, sum = false): Promise<number> {
  const text = await (await fetch(new URL('/metrics', stack.gateway.url))).text();
  const lines = text
    .split('\n')
    .filter((line) => (sum ? line.startsWith(`${series}{`) : line.startsWith(`${series} `)));
  return lines.reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

const kind = (stack: Stack, name: string) => metric(stack, `graphql_document_requests_total{kind="${name}"}`);
const executed = (stack: Stack) => metric(stack, 'graphql_operations_total', true);

/** A refusal at the door: its code and status, nothing upstream, nothing executed, counted as refused. */
async function expectRefusedAtDoor(
  stack: Stack,
  send: () => Promise<GqlResponse>,
  code: string,
  status: number,
): Promise<GqlResponse> {
  const [upstream, ran, refused] = [stack.count(), await executed(stack), await kind(stack, 'refused')];
  const started = Date.now();
  const response = await send();
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(errorCodes(response)).toEqual([code]);
  expect(response.status).toBe(status);
  expect(response.body.data).toBeUndefined();
  expect(response.headers.get('cache-control')).toBe('private, no-cache, must-revalidate');
  expect(stack.count()).toBe(upstream);
  expect(await executed(stack)).toBe(ran);
  expect(await kind(stack, 'refused')).toBe(refused + 1);
  return response;
}

describe('with a manifest (PERSISTED_DOCUMENTS)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      store: { seed: demoCatalogue(), responseDelayMs: 150 },
      env: { PERSISTED_DOCUMENTS: manifestPath, PETSTORE_RATE_LIMITS: '100/1m' },
    });
  });
  afterAll(() => stack.close());

  it('runs a listed document by documentId, with or without sha256:, as its text runs: same data and cost', async () => {
    const asText = await post(stack, { query: PETS });
    const persistedBefore = await kind(stack, 'persisted');
    const byId = await post(stack, { documentId: `sha256:${sha256(PETS)}` });
    const bareId = await post(stack, { documentId: sha256(PETS).toUpperCase() });
    for (const response of [byId, bareId]) {
      expect(response.status).toBe(200);
      expect(response.body.errors).toBeUndefined();
      expect(response.body.data).toEqual(asText.body.data);
      expect(response.body.extensions?.cost).toEqual(asText.body.extensions?.cost);
    }
    expect(asText.body.extensions?.cost).toEqual({ estimatedUpstreamRequests: 1, actualUpstreamRequests: 1 });
    expect(await kind(stack, 'persisted')).toBe(persistedBefore + 2);
  });

  it('passes variables and operationName, and prices a dry run of a listed document as of its text', async () => {
    const variables = { dryRun: true };
    const asText = await post(stack, { query: RATE, variables, operationName: 'Rate' });
    const byId = await post(stack, { documentId: `sha256:${sha256(RATE)}`, variables, operationName: 'Rate' });
    expect(byId.body).toEqual(asText.body);
    expect(byId.body.data).toEqual({ rateLimit: { cost: 0 } });
  });

  it('applies the operation limits and the estimate to a listed document exactly as to its text', async () => {
    const before = stack.count();
    for (const document of [ALIASED, COSTLY]) {
      const asText = await post(stack, { query: document });
      const byId = await post(stack, { documentId: `sha256:${sha256(document)}` });
      expect(byId.status).toBe(asText.status);
      expect(byId.body.errors).toEqual(asText.body.errors);
      expect(byId.body.errors?.length).toBeGreaterThan(0);
      expect(byId.body.data ?? null).toBeNull();
    }
    expect(errorCodes(await post(stack, { documentId: `sha256:${sha256(ALIASED)}` }))).toEqual([
      'GRAPHQL_VALIDATION_FAILED',
    ]);
    const costly = await post(stack, { documentId: `sha256:${sha256(COSTLY)}` });
    expect(errorCodes(costly)).toEqual(['UPSTREAM_BUDGET_EXCEEDED']);
    expect(costly.body.errors?.[0]?.extensions?.estimatedUpstreamRequests).toBe(30);
    expect(stack.count()).toBe(before);
  });

  it('shares one execution among identical requests by id in flight, as among identical texts', async () => {
    const shared = await metric(stack, 'graphql_shared_operations_total');
    const before = stack.count();
    const body = { documentId: `sha256:${sha256(PETS)}` };
    const responses = await Promise.all([post(stack, body), post(stack, body), post(stack, body)]);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(stack.count() - before).toBe(1);
    expect((await metric(stack, 'graphql_shared_operations_total')) - shared).toBe(2);
  });

  it('runs a listed query by GET; a listed mutation by GET is refused as any mutation by GET is', async () => {
    const byGet = await get(stack, { documentId: `sha256:${sha256(PETS)}` });
    expect(byGet.status).toBe(200);
    expect(byGet.body.data).toEqual((await post(stack, { query: PETS })).body.data);

    const creates = stack.count('createPet');
    const mutation = await get(stack, { documentId: `sha256:${sha256(CREATE)}` });
    expect(mutation.status).toBe(405);
    expect(stack.count('createPet')).toBe(creates);
  });

  it('answers an unknown documentId PERSISTED_QUERY_NOT_IN_LIST (404), by POST and GET, sending nothing', async () => {
    const unknown = `sha256:${sha256('{ never }')}`;
    const response = await expectRefusedAtDoor(
      stack,
      () => post(stack, { documentId: unknown, variables: { x: 1 } }),
      'PERSISTED_QUERY_NOT_IN_LIST',
      404,
    );
    expect(response.body.errors?.[0]?.message).toBe(
      `Persisted query '${unknown}' not found in the persisted query list`,
    );
    await expectRefusedAtDoor(stack, () => get(stack, { documentId: 'nope' }), 'PERSISTED_QUERY_NOT_IN_LIST', 404);
  });

  it('refuses a documentId sent with a query (which would run?) with BAD_REQUEST', async () => {
    await expectRefusedAtDoor(
      stack,
      () => post(stack, { documentId: `sha256:${sha256(PETS)}`, query: PETS }),
      'BAD_REQUEST',
      400,
    );
  });

  it("runs a listed APQ hash at once, and leaves an unlisted one to Apollo Server's APQ as before", async () => {
    const listed = await post(stack, { extensions: apq(sha256(PETS)) });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual((await post(stack, { query: PETS })).body.data);

    const query = '{ unlisted: __typename }';
    const unlisted = await post(stack, { extensions: apq(sha256(query)) });
    expect(errorCodes(unlisted)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
    const registered = await post(stack, { query, extensions: apq(sha256(query)) });
    expect(registered.body.data).toEqual({ unlisted: 'Query' });
    expect((await post(stack, { extensions: apq(sha256(query)) })).body.data).toEqual({ unlisted: 'Query' });

    await expectRefusedAtDoor(
      stack,
      () => post(stack, { query: '{ other: __typename }', extensions: apq(sha256(PETS)) }),
      'BAD_REQUEST',
      400,
    );
  });
});

describe('without a manifest', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('answers a documentId PERSISTED_QUERY_NOT_IN_LIST saying it serves none, and how to start it so', async () => {
    const id = Object.keys(clientManifest)[0] as string;
    const response = await expectRefusedAtDoor(
      stack,
      () => post(stack, { documentId: id }),
      'PERSISTED_QUERY_NOT_IN_LIST',
      404,
    );
    expect(response.body.errors?.[0]?.message).toBe(
      `Persisted query '${id}' not found: this gateway serves no persisted documents; start it with PERSISTED_DOCUMENTS=<path of a persisted-documents manifest> (npm run codegen writes one)`,
    );
  });
});

describe('with PERSISTED_DOCUMENTS_ONLY=true', () => {
  let stack: Stack;
  const lines: string[] = [];
  beforeAll(async () => {
    stack = await startStack({
      store: { seed: demoCatalogue() },
      env: {
        PERSISTED_DOCUMENTS: manifestPath,
        PERSISTED_DOCUMENTS_ONLY: 'true',
        PETSTORE_RATE_LIMITS: '100/1m',
        ALLOW_BATCHED_REQUESTS: 'true',
      },
      gateway: { logger: createLogger('trace', { write: (line: string) => void lines.push(line) }) },
    });
  });
  afterAll(() => stack.close());

  it('runs the typed client example with persisted documents: ids on the wire, never a document', async () => {
    const [persisted, freeform] = [await kind(stack, 'persisted'), await kind(stack, 'freeform')];
    const summary = await runExample({ url: stack.gateway.url, persisted: true, first: 100 });
    expect(summary.pets).toHaveLength(121);
    expect(summary.pages).toBe(2);
    expect(summary.foundCreated).toBe(true);
    // Two pages, the create, the lookup, the budget: five requests, each by id.
    expect((await kind(stack, 'persisted')) - persisted).toBe(5);
    expect(await kind(stack, 'freeform')).toBe(freeform);
  }, 30_000);

  it('runs a freeform document that is character for character a listed one, and refuses any other', async () => {
    const freeform = await kind(stack, 'freeform');
    const listed = await post(stack, { query: PETS });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toBeDefined();
    expect(await kind(stack, 'freeform')).toBe(freeform + 1);

    const response = await expectRefusedAtDoor(
      stack,
      () => post(stack, { query: `${PETS} `, variables: { secret: 'do-not-log-this-value' } }),
      'QUERY_NOT_IN_SAFELIST',
      403,
    );
    expect(response.body.errors?.[0]?.message).toBe('The operation body was not found in the persisted query safelist');
    await expectRefusedAtDoor(stack, () => get(stack, { query: '{ __typename }' }), 'QUERY_NOT_IN_SAFELIST', 403);
    expect(lines.join('\n')).not.toContain('do-not-log-this-value');
  });

  it('refuses the hostile operations of the abuse tests before parsing them', async () => {
    const deep = `{ pets { edges { node { ${'category { '.repeat(200)}id${' }'.repeat(200)} } } } }`;
    const aliases = `{ ${Array.from({ length: 1_000 }, (_, i) => `a${i}: pets(first: 100) { nodes { id } }`).join(' ')} }`;
    const costly = COSTLY.replace('query Costly', 'query Unlisted');
    for (const query of [deep, aliases, costly]) {
      await expectRefusedAtDoor(stack, () => post(stack, { query }), 'QUERY_NOT_IN_SAFELIST', 403);
    }
  });

  it('keeps APQ registration off: an unlisted hash stays unknown, with a query or without', async () => {
    const query = '{ registered: __typename }';
    const hash = sha256(query);
    for (const body of [{ extensions: apq(hash) }, { query, extensions: apq(hash) }, { extensions: apq(hash) }]) {
      await expectRefusedAtDoor(stack, () => post(stack, body), 'PERSISTED_QUERY_NOT_IN_LIST', 404);
    }
    await expectRefusedAtDoor(
      stack,
      () => get(stack, { extensions: JSON.stringify(apq(hash)) }),
      'PERSISTED_QUERY_NOT_IN_LIST',
      404,
    );
    // A listed hash runs, by POST and by GET.
    expect((await post(stack, { extensions: apq(sha256(PETS)) })).body.data).toBeDefined();
    const byGet = await get(stack, { extensions: JSON.stringify(apq(sha256(PETS))) });
    expect(byGet.status).toBe(200);
    expect(byGet.body.data).toBeDefined();
  });

  it('refuses an extensions.persistedQuery of the wrong shape with BAD_REQUEST saying so, not as an unlisted hash', async () => {
    const response = await expectRefusedAtDoor(
      stack,
      () => post(stack, { extensions: { persistedQuery: { version: 1, sha256Hash: 42 } } }),
      'BAD_REQUEST',
      400,
    );
    expect(response.body.errors?.[0]?.message).toBe(
      "extensions.persistedQuery.sha256Hash must be the document's SHA-256 as 64 hex digits; got a number",
    );
    await expectRefusedAtDoor(
      stack,
      () => get(stack, { extensions: JSON.stringify({ persistedQuery: [] }) }),
      'BAD_REQUEST',
      400,
    );
  });

  it('answers an unknown documentId PERSISTED_QUERY_NOT_IN_LIST, and counts against no key', async () => {
    const used = async () =>
      (
        (
          await post(stack, {
            documentId: Object.keys(clientManifest).find((id) => clientManifest[id]?.includes('RateLimit')),
          })
        ).body.data as { rateLimit: { used: number } }
      ).rateLimit.used;
    const before = await used();
    await expectRefusedAtDoor(
      stack,
      () => post(stack, { documentId: `sha256:${'0'.repeat(64)}` }),
      'PERSISTED_QUERY_NOT_IN_LIST',
      404,
    );
    expect(await used()).toBe(before);
  });

  it('judges every operation of a batch: ids run, one unlisted document refuses the whole batch', async () => {
    const send = async (batch: unknown[]) => {
      const response = await fetch(stack.gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    const ids = await send([{ documentId: `sha256:${sha256(PETS)}` }, { extensions: apq(sha256(RATE)) }]);
    expect(ids.status).toBe(200);
    expect((ids.body as GqlResponse['body'][]).map((answer) => answer.errors)).toEqual([undefined, undefined]);

    const before = stack.count();
    const mixed = await send([{ documentId: `sha256:${sha256(PETS)}` }, { query: '{ pets { nodes { id } } }' }]);
    expect(mixed.status).toBe(403);
    expect(mixed.body).toEqual({
      errors: [
        {
          message: 'The operation body was not found in the persisted query safelist',
          extensions: { code: 'QUERY_NOT_IN_SAFELIST' },
        },
      ],
    });
    expect(stack.count()).toBe(before);
  });
});
