import { isLosslessNumber, parse } from 'lossless-json';

/**
 * The ways of asking for one page of pets that `npm run bench:throughput` compares: REST on the
 * store, this gateway, Tailcall and GraphQL Mesh. Each target turns the same page (size, status
 * filter, position) into its own request and reads the pets back out of its own answer, so every
 * workload is expressed once and checked the same way on all of them.
 */

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
  request(page: PageQuery): HttpRequest;
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
    request: (page) => {
      const args = [`first: ${page.limit}`];
      if (page.status !== undefined) args.push(`status: ${page.status.toUpperCase()}`);
      if (page.after !== undefined) args.push(`after: ${JSON.stringify(page.after.cursor)}`);
      return graphqlPost(endpoint, `{ pets(${args.join(', ')}) { nodes { id name status } } }`);
    },
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
    request: (page) => graphqlPost(endpoint, `{ pets(${restArguments(page)}) { id name status } }`),
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
    request: (page) => {
      const args = [`limit: ${page.limit}`];
      if (page.status !== undefined) args.push(`status: ${page.status}`);
      if (page.after !== undefined) args.push(`after: ${page.after.id}`);
      return graphqlPost(endpoint, `{ listPets(${args.join(', ')}) { ... on Pet { id name status } } }`);
    },
    ids: (body) => idsOf(dataOf(body)?.listPets),
  };
}

function restArguments(page: PageQuery): string {
  const args = [`limit: ${page.limit}`];
  if (page.status !== undefined) args.push(`status: ${JSON.stringify(page.status)}`);
  if (page.after !== undefined) args.push(`after: ${JSON.stringify(page.after.id)}`);
  return args.join(', ');
}

function graphqlPost(endpoint: URL, query: string): HttpRequest {
  return { method: 'POST', path: endpoint.pathname, headers: JSON_HEADERS, body: JSON.stringify({ query }) };
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
