/**
 * The ways of asking for one page of pets the load benches compare (REST on the store, this gateway,
 * Tailcall, Mesh): each target writes the same page as its own request and reads the pets back out
 * of its own answer, so every workload is checked the same way.
 */

import { isLosslessNumber, parse } from 'lossless-json';

/** One page of `GET /v1/pets`; `after.id` is what the store's `Link: rel="next"` puts in `after`, `after.cursor` the gateway's endCursor. */
export interface PageQuery {
  readonly limit: number;
  readonly status?: string | undefined;
  readonly after?: { readonly id: string; readonly cursor: string } | undefined;
}

/** The one-call workload, and the health check between runs. */
export const ONE_CALL: PageQuery = { limit: 20 };

export interface HttpRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | undefined;
}

export interface Target {
  /** The row's label (Markdown), where it answers, and its process (for CPU and memory). */
  readonly name: string;
  readonly origin: string;
  readonly pid: number;
  /** A file the server logs to, named if it never answers. */
  readonly log?: string | undefined;
  /** The page as this target asks for it: GraphQL arguments as literals, or with `variables`. */
  request(page: PageQuery, form?: 'variables'): HttpRequest;
  /** The pets' ids in an answer, or undefined when it is not a clean page. */
  ids(body: unknown): string[] | undefined;
}

/** The store itself: `GET /v1/pets?limit=…&status=…&after=…`, as its Link header writes it. */
export function restTarget(name: string, storeUrl: string, key: string, pid: number): Target {
  const base = new URL(storeUrl);
  return {
    name,
    origin: base.origin,
    pid,
    request: (page) => {
      const query = new URLSearchParams({ limit: String(page.limit) });
      if (page.status !== undefined) query.set('status', page.status);
      if (page.after !== undefined) query.set('after', page.after.id);
      return { method: 'GET', path: `${base.pathname}/pets?${query}`, headers: { authorization: `Bearer ${key}` } };
    },
    ids: idsOf,
  };
}

/** One argument of the root field: its type for a variable, its value, and its literal; left out when undefined. */
type Argument = readonly [name: string, type: string, value: string | number | undefined, literal?: string];
const quoted = (text: string | undefined) => (text === undefined ? undefined : JSON.stringify(text));

/**
 * A GraphQL target: `{ field(a: 1) selection }` with literals, or `query Page($a: T) { … }` with
 * `variables` (one document per shape of page, as a client sends it). Only the arguments a page
 * sets are declared: Tailcall 1.0.0 refuses a declared variable left out of `variables`.
 */
function graphqlTarget(
  name: string,
  url: string,
  pid: number,
  log: string | undefined,
  shape: { field: string; selection: string; args(page: PageQuery): Argument[]; pets(data: any): unknown },
): Target {
  const endpoint = new URL(url);
  const request = (page: PageQuery, form?: 'variables'): HttpRequest => {
    const given = shape.args(page).filter(([, , value]) => value !== undefined);
    let body: string;
    if (form === 'variables') {
      const declared = given.map(([arg, type]) => `$${arg}: ${type}`).join(', ');
      const passed = given.map(([arg]) => `${arg}: $${arg}`).join(', ');
      const query = `query Page(${declared}) { ${shape.field}(${passed}) ${shape.selection} }`;
      body = JSON.stringify({ query, variables: Object.fromEntries(given.map(([arg, , value]) => [arg, value])) });
    } else {
      const literals = given.map(([arg, , value, literal]) => `${arg}: ${literal ?? value}`).join(', ');
      body = JSON.stringify({ query: `{ ${shape.field}(${literals}) ${shape.selection} }` });
    }
    return { method: 'POST', path: endpoint.pathname, headers: { 'content-type': 'application/json' }, body };
  };
  const ids = (body: unknown) => {
    const answer = body as { data?: unknown; errors?: unknown } | null;
    return answer?.errors === undefined && answer?.data ? idsOf(shape.pets(answer.data)) : undefined;
  };
  return { name, origin: endpoint.origin, pid, log, request, ids };
}

/** This gateway: `pets(first:, status:, after:)` with the cursor it handed out itself. */
export const gatewayTarget = (name: string, url: string, pid: number): Target =>
  graphqlTarget(name, url, pid, undefined, {
    field: 'pets',
    selection: '{ nodes { id name status } }',
    args: (page) => [
      ['first', 'Int!', page.limit],
      ['status', 'PetStatus', page.status?.toUpperCase()],
      ['after', 'String', page.after?.cursor, quoted(page.after?.cursor)],
    ],
    pets: (data) => data.pets?.nodes,
  });

/** Tailcall, on the config bench/lib/peers.ts writes: `pets(limit:, status:, after:)` onto the query string. */
export const tailcallTarget = (name: string, url: string, pid: number, log: string): Target =>
  graphqlTarget(name, url, pid, log, {
    field: 'pets',
    selection: '{ id name status }',
    args: (page) => [
      ['limit', 'Int', page.limit],
      ['status', 'String', page.status, quoted(page.status)],
      ['after', 'String', page.after?.id, quoted(page.after?.id)],
    ],
    pets: (data) => data.pets,
  });

/** GraphQL Mesh v1 on the store's OpenAPI document: `listPets(limit:, status:, after:)`, a union with Error. */
export const meshTarget = (name: string, url: string, pid: number, log: string): Target =>
  graphqlTarget(name, url, pid, log, {
    field: 'listPets',
    selection: '{ ... on Pet { id name status } }',
    args: (page) => [
      ['limit', 'PositiveInt', page.limit],
      ['status', 'PetStatus', page.status],
      ['after', 'BigInt', page.after?.id],
    ],
    pets: (data) => data.listPets,
  });

/** Ids as exact decimal strings: the store and Tailcall write int64 ids as JSON numbers, GraphQL ID is a string. */
function idsOf(pets: unknown): string[] | undefined {
  if (!Array.isArray(pets)) return undefined;
  const ok = pets.every(
    (pet) => typeof pet?.name === 'string' && (typeof pet.id === 'string' || isLosslessNumber(pet.id)),
  );
  return ok ? pets.map((pet) => String(pet.id)) : undefined;
}

/** Sends one request; numbers stay exact (9007199254740993 is in the demo catalogue). */
export async function send(
  target: Target,
  request: HttpRequest,
): Promise<{ status: number; body: unknown; text: string }> {
  const { method, headers, body } = request;
  const response = await fetch(new URL(request.path, target.origin), { method, headers, ...(body ? { body } : {}) });
  const text = await response.text();
  try {
    return { status: response.status, body: parse(text), text };
  } catch {
    return { status: response.status, body: undefined, text };
  }
}
