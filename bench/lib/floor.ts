/**
 * The floors of `npm run bench:throughput`.
 *
 * The Node floor: the least a Node process can do to answer a page of pets through the store.
 * node:http takes the POST and parses its JSON body; undici's keep-alive Pool (as the gateway's) asks
 * the store for the page its variables name (`first`, `status`, `after`; 20 pets when it has none,
 * as the one-call request); the answer is parsed and written back as `{ data: { pets: { nodes } } }`. No GraphQL, no limits, no checks: not a gateway,
 * but the cost every Node gateway pays per request before it does anything of its own, measured
 * the same way as the rest, so the report can say how much of the gap to Tailcall is Node's.
 *
 * On the distinct mix both floors take `after` as the store's own pet id, as Tailcall does (the
 * gateway's cursors are opaque, sealed with a key: that work is the gateway's own).
 *
 * The Apollo floor: the least Apollo Server can do for the same request. The same node:http edge and
 * undici pool, with Apollo Server 5 and graphql-js between them: a three-type schema, one resolver
 * that makes the call, `executeHTTPGraphQLRequest`, the same plugins disabled as the gateway's
 * (cache control, inline trace). No budget, no limits, no checks, no metrics, no logging. Whatever
 * the gateway spends above this row is its own; what this row spends above the Node floor is
 * Apollo Server's and graphql-js's, which issue 15 keeps as the server.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, HeaderMap } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { Pool } from 'undici';

interface Floor {
  readonly url: string;
  close(): Promise<void>;
}

type StorePet = { id: number; name: string; status: string };

/** Which page: the mix's variables, with the store's status in GraphQL's case. */
interface PageArgs {
  readonly first?: number | undefined;
  readonly status?: string | undefined;
  readonly after?: string | undefined;
}

/** Collects a request body, then hands it over; the same work for both floors. */
function onBody(handler: (body: string, req: IncomingMessage, res: ServerResponse) => Promise<void>) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handler(Buffer.concat(chunks).toString('utf8'), req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  };
}

async function listen(server: Server, pool: Pool, stop: () => Promise<void> = async () => {}): Promise<Floor> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await stop();
      await pool.close();
    },
  };
}

function storePage(storeUrl: string, key: string): { pool: Pool; page(args: PageArgs): Promise<StorePet[]> } {
  const base = new URL(storeUrl);
  const pool = new Pool(base.origin, { connections: 64 });
  const path = `${base.pathname.replace(/\/$/, '')}/pets?limit=`;
  const headers = { authorization: `Bearer ${key}`, accept: 'application/json' };
  return {
    pool,
    async page({ first = 20, status, after }) {
      let query = `${path}${first}`;
      if (status !== undefined) query += `&status=${status.toLowerCase()}`;
      if (after !== undefined) query += `&after=${encodeURIComponent(after)}`;
      const answer = await pool.request({ path: query, method: 'GET', headers });
      return (await answer.body.json()) as StorePet[];
    },
  };
}

/**
 * The Node floor and its two variants for the tail with sharing (the sharing floor runs in `npm run
 * bench` on the one call and in `bench:compare`; the constant floor in `bench:compare` only):
 *
 *   floor            each request its own GET
 *   sharing-floor    identical requests in flight (the same body) share one GET and one answer, as
 *                    the gateway's coalescing does, and nothing else: the tail sharing itself
 *                    brings, since every request waits for the GET of the answer it joined
 *   constant-floor   every request gets the one-call page read once at start, no GET under load:
 *                    the tail of node:http, V8's collector, the load tool and the machine, with
 *                    nothing to wait for
 */
export type NodeFloorKind = 'floor' | 'sharing-floor' | 'constant-floor';

/** Every floor, by the name the benches and bench/throughput-child.ts take it under. */
export const FLOOR_KINDS = ['floor', 'apollo', 'sharing-floor', 'constant-floor'] as const;
export type FloorKind = (typeof FLOOR_KINDS)[number];
export const isFloorKind = (name: string): name is FloorKind => (FLOOR_KINDS as readonly string[]).includes(name);

export async function startFloor(storeUrl: string, key: string, kind: NodeFloorKind = 'floor'): Promise<Floor> {
  const store = storePage(storeUrl, key);
  const answer = async (variables: PageArgs | undefined): Promise<string> => {
    const pets = await store.page(variables ?? {});
    const nodes = pets.map((pet) => ({ id: String(pet.id), name: pet.name, status: pet.status.toUpperCase() }));
    return JSON.stringify({ data: { pets: { nodes } } });
  };
  const fixed = kind === 'constant-floor' ? await answer(undefined) : undefined;
  const inFlight = new Map<string, Promise<string>>();
  const shared = (body: string, variables: PageArgs | undefined): Promise<string> => {
    let running = inFlight.get(body);
    if (running === undefined) {
      running = answer(variables);
      inFlight.set(body, running);
      const done = () => inFlight.delete(body);
      running.then(done, done);
    }
    return running;
  };
  const server = createServer(
    onBody(async (body, _req, res) => {
      const { variables } = JSON.parse(body) as { variables?: PageArgs };
      const text = fixed ?? (await (kind === 'sharing-floor' ? shared(body, variables) : answer(variables)));
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(text);
    }),
  );
  return listen(server, store.pool);
}

const FLOOR_SCHEMA = `#graphql
  enum PetStatus { AVAILABLE PENDING SOLD }
  type Pet { id: ID! name: String! status: PetStatus! }
  type PetConnection { nodes: [Pet!]! }
  type Query { pets(first: Int = 20, status: PetStatus, after: ID): PetConnection! }
`;

export async function startApolloFloor(storeUrl: string, key: string): Promise<Floor> {
  const store = storePage(storeUrl, key);
  const apollo = new ApolloServer({
    typeDefs: FLOOR_SCHEMA,
    resolvers: {
      Query: {
        pets: async (_: unknown, args: PageArgs) => ({
          nodes: (await store.page(args)).map((pet) => ({ ...pet, status: pet.status.toUpperCase() })),
        }),
      },
    },
    plugins: [
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginLandingPageDisabled(),
    ],
  });
  await apollo.start();
  const server = createServer(
    onBody(async (body, req, res) => {
      const headers = new HeaderMap();
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers.set(name, value);
      }
      const answer = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method ?? 'POST', headers, search: '', body: JSON.parse(body) },
        context: async () => ({}),
      });
      for (const [name, value] of answer.headers) res.setHeader(name, value);
      res.statusCode = answer.status ?? 200;
      if (answer.body.kind !== 'complete') throw new Error('incremental delivery is not part of the floor');
      res.end(answer.body.string);
    }),
  );
  return listen(server, store.pool, () => apollo.stop());
}
