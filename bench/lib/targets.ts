/**
 * The ways of asking for one page of pets that `npm run bench:throughput` compares: REST on the
 * store, this gateway, Tailcall and GraphQL Mesh. Each target turns the same page into its own
 * request and reads the pets back out of its own answer, so every workload is checked the same way.
 */

import { isLosslessNumber, parse } from 'lossless-json';

/** One page of the store's `GET /v1/pets`: `limit`, an optional `status`, and where it starts. */
export interface PageQuery {
  readonly limit: number;
  /** A REST status (available, pending, sold). */
  readonly status?: string | undefined;
  /**
   * Continue after a pet: `id` is what the store's `Link: rel="next"` puts in `after`; `cursor` is
   * the gateway's own endCursor for the page that ended there (the gateway's cursors are opaque).
   */
  readonly after?: { readonly id: string; readonly cursor: string } | undefined;
}

/** The same page of 20 pets every time: the one-call workload, and the health check between runs. */
export const ONE_CALL: PageQuery = { limit: 20 };

/** How a GraphQL request carries its arguments: inline, or in one document with variables. */
export type Form = 'literal' | 'variables';

export interface HttpRequest {
  readonly method: 'GET' | 'POST';
  /** Path and query on the target's origin. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | undefined;
}

export interface Target {
  /** The row's label, Markdown. */
  readonly name: string;
  /** scheme://host:port the load tool connects to. */
  readonly origin: string;
  /** The process answering (for its CPU time and memory). */
  readonly pid: number;
  /** A file the server logs to, shown if it never answers. */
  readonly log?: string | undefined;
  /** The page as this target asks for it; GraphQL targets write arguments as literals unless told `variables`. */
  request(page: PageQuery, form?: Form): HttpRequest;
  /** The pets' ids in an answer, or undefined when it is not a clean page (errors, wrong shape). */
  ids(body: unknown): string[] | undefined;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

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
    ids: (body) => idsOf(body),
  };
}

/** This gateway: `pets(first:, status:, after:)` with the cursor it handed out itself. */
export function gatewayTarget(name: string, url: string, pid: number): Target {
  const endpoint = new URL(url);
  return {
    name,
    origin: endpoint.origin,
    pid,
    request: (page, form) =>
      graphqlPost(endpoint, form, 'pets', '{ nodes { id name status } }', [
        { name: 'first', type: 'Int!', value: page.limit, literal: String(page.limit) },
        { name: 'status', type: 'PetStatus', value: page.status?.toUpperCase(), literal: page.status?.toUpperCase() },
        { name: 'after', type: 'String', value: page.after?.cursor, literal: quoted(page.after?.cursor) },
      ]),
    ids: (body) => idsOf(dataOf(body)?.pets?.nodes),
  };
}

/** Tailcall, on the config bench/lib/peers.ts writes: `pets(limit:, status:, after:)` mapped onto the query string. */
export function tailcallTarget(name: string, url: string, pid: number, log: string): Target {
  const endpoint = new URL(url);
  return {
    name,
    origin: endpoint.origin,
    pid,
    log,
    request: (page, form) =>
      graphqlPost(endpoint, form, 'pets', '{ id name status }', [
        { name: 'limit', type: 'Int', value: page.limit, literal: String(page.limit) },
        { name: 'status', type: 'String', value: page.status, literal: quoted(page.status) },
        { name: 'after', type: 'String', value: page.after?.id, literal: quoted(page.after?.id) },
      ]),
    ids: (body) => idsOf(dataOf(body)?.pets),
  };
}

/** GraphQL Mesh v1 on the store's OpenAPI document: `listPets(limit:, status:, after:)`, a union with Error. */
export function meshTarget(name: string, url: string, pid: number, log: string): Target {
  const endpoint = new URL(url);
  return {
    name,
    origin: endpoint.origin,
    pid,
    log,
    request: (page, form) =>
      graphqlPost(endpoint, form, 'listPets', '{ ... on Pet { id name status } }', [
        { name: 'limit', type: 'PositiveInt', value: page.limit, literal: String(page.limit) },
        { name: 'status', type: 'PetStatus', value: page.status, literal: page.status },
        { name: 'after', type: 'BigInt', value: page.after?.id, literal: page.after?.id },
      ]),
    ids: (body) => idsOf(dataOf(body)?.listPets),
  };
}

const quoted = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : JSON.stringify(text);

/** One argument of a root field: its GraphQL type for a variable, its value, and its literal; absent when undefined. */
interface Argument {
  readonly name: string;
  readonly type: string;
  readonly value: string | number | undefined;
  readonly literal: string | undefined;
}

/**
 * `{ field(a: 1) selection }` with literals, or `query Page($a: T) { field(a: $a) selection }`
 * with `variables`: one document for every page of the same shape, as a client sends it. Only the
 * arguments a page sets are declared (Tailcall 1.0.0 refuses a declared variable left out of
 * `variables`, which the GraphQL spec allows).
 */
function graphqlPost(
  endpoint: URL,
  form: Form | undefined,
  field: string,
  selection: string,
  args: readonly Argument[],
): HttpRequest {
  let query: string;
  let variables: Record<string, string | number> | undefined;
  if (form === 'variables') {
    const given = args.filter((arg) => arg.value !== undefined);
    const declared = given.map((arg) => `$${arg.name}: ${arg.type}`).join(', ');
    query = `query Page(${declared}) { ${field}(${given.map((arg) => `${arg.name}: $${arg.name}`).join(', ')}) ${selection} }`;
    variables = Object.fromEntries(given.map((arg) => [arg.name, arg.value as string | number]));
  } else {
    const given = args.filter((arg) => arg.literal !== undefined).map((arg) => `${arg.name}: ${arg.literal}`);
    query = `{ ${field}(${given.join(', ')}) ${selection} }`;
  }
  return {
    method: 'POST',
    path: endpoint.pathname,
    headers: JSON_HEADERS,
    body: JSON.stringify(variables === undefined ? { query } : { query, variables }),
  };
}

/** `data` of an answer without `errors`; its fields are checked one by one by the callers. */
function dataOf(body: unknown): any {
  const answer = body as { data?: unknown; errors?: unknown } | null;
  return answer !== null && typeof answer === 'object' && answer.errors === undefined ? answer.data : undefined;
}

/**
 * Ids as exact decimal strings: the store and Tailcall write int64 ids as JSON numbers (read
 * losslessly by send), GraphQL ID is a string.
 */
function idsOf(pets: unknown): string[] | undefined {
  if (!Array.isArray(pets)) return undefined;
  const ids: string[] = [];
  for (const pet of pets) {
    if (typeof pet?.name !== 'string' || !(typeof pet.id === 'string' || isLosslessNumber(pet.id))) return undefined;
    ids.push(String(pet.id));
  }
  return ids;
}

/**
 * Sends one request to a target and returns its status and parsed body (undefined when not JSON);
 * numbers stay exact (9007199254740993 is in the demo catalogue).
 */
export async function send(
  target: Target,
  request: HttpRequest,
): Promise<{ status: number; body: unknown; text: string }> {
  const response = await fetch(new URL(request.path, target.origin), {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = parse(text);
  } catch {}
  return { status: response.status, body, text };
}
