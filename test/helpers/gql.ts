/** A GraphQL client for tests: one POST over real HTTP, the parsed response and its status. */

import { Agent, setGlobalDispatcher } from 'undici';

// fetch's dispatcher is undici's Agent, as it was while the gateway imported undici's index (which
// installs one for the whole process): the tests' and in-process benches' clients, and so
// bench:limits' counts, do not depend on what the gateway imports (it loads undici's Pool alone).
setGlobalDispatcher(new Agent());

export interface GqlResponse<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: {
    data?: T | null;
    errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[];
    extensions?: Record<string, unknown>;
  };
}

export interface GqlOptions {
  readonly variables?: Record<string, unknown>;
  /** Sent as `Authorization: Bearer <key>`. */
  readonly key?: string;
  readonly headers?: Record<string, string>;
}

export async function gql<T = Record<string, any>>(
  url: string,
  query: string,
  options: GqlOptions = {},
): Promise<GqlResponse<T>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) };
}

/** The `extensions.code` of every error of a response, in order. */
export function errorCodes(response: GqlResponse<unknown>): unknown[] {
  return (response.body.errors ?? []).map((error) => error.extensions?.code);
}
