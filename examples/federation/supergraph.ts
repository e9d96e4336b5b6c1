/**
 * Composes a supergraph from a config in Rover's format (`supergraph.yaml`), with @apollo/composition,
 * the library inside `rover supergraph compose`: each subgraph's SDL comes from a file or from the
 * running subgraph's `_service { sdl }`, and its `routing_url` becomes the URL the router calls.
 */

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';
import { parse as parseYaml } from 'yaml';

export type SchemaSource =
  | { readonly file: string }
  | { readonly subgraphUrl: string; readonly introspectionHeaders: Readonly<Record<string, string>> };

export interface SubgraphConfig {
  readonly name: string;
  readonly routingUrl: string;
  readonly schema: SchemaSource;
}

export interface SupergraphConfig {
  /** As written, e.g. `=2.7.0`; composition uses the installed @apollo/composition (2.x). */
  readonly federationVersion: string;
  readonly subgraphs: readonly SubgraphConfig[];
}

/**
 * Reads a Rover-format config: `file` paths are relative to it, and `${env.NAME}` is replaced from
 * `env` as Rover does, so credentials for `introspection_headers` stay out of the file.
 */
export function readSupergraphConfig(
  path: string,
  env: Readonly<Record<string, string | undefined>> = {},
): SupergraphConfig {
  const raw = parseYaml(readFileSync(path, 'utf8')) as { federation_version?: unknown; subgraphs?: unknown } | null;
  const federationVersion = String(raw?.federation_version ?? '2');
  if (!/^=?2(\.\d+){0,2}$/.test(federationVersion)) {
    throw new Error(`${path}: federation_version must be 2 or =2.x.y, got ${federationVersion}`);
  }
  const entries = Object.entries((raw?.subgraphs ?? {}) as Record<string, unknown>);
  if (entries.length === 0) throw new Error(`${path}: no subgraphs`);
  const expand = (value: string): string =>
    value.replace(/\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) throw new Error(`${path}: \${env.${name}} is used but ${name} is not set`);
      return found;
    });
  return {
    federationVersion,
    subgraphs: entries.map(([name, value]) => readSubgraph(path, name, value, expand)),
  };
}

function readSubgraph(path: string, name: string, value: unknown, expand: (value: string) => string): SubgraphConfig {
  const entry = (value ?? {}) as { routing_url?: unknown; schema?: Record<string, unknown> };
  const where = `${path}: subgraphs.${name}`;
  if (typeof entry.routing_url !== 'string') throw new Error(`${where}.routing_url must be a URL`);
  const routingUrl = expand(entry.routing_url);
  const schema = entry.schema ?? {};
  if (typeof schema.file === 'string') {
    return { name, routingUrl, schema: { file: resolve(dirname(path), expand(schema.file)) } };
  }
  if (typeof schema.subgraph_url === 'string') {
    const headers = (schema.introspection_headers ?? {}) as Record<string, unknown>;
    return {
      name,
      routingUrl,
      schema: {
        subgraphUrl: expand(schema.subgraph_url),
        introspectionHeaders: Object.fromEntries(
          Object.entries(headers).map(([key, header]) => [key, expand(String(header))]),
        ),
      },
    };
  }
  throw new Error(`${where}.schema needs file or subgraph_url`);
}

export interface ComposeOptions {
  /** Routing URLs that replace the config's, by subgraph name (the example on another PORT, tests on port 0). */
  readonly routingUrls?: Readonly<Record<string, string>>;
  /** Per `_service { sdl }` request. */
  readonly timeoutMs?: number;
}

export interface Composed {
  readonly supergraphSdl: string;
  /** Composition hints, one line each (Rover prints them as warnings). */
  readonly hints: readonly string[];
}

/** Fetches or reads every subgraph's SDL and composes them; composition errors are thrown, one per line. */
export async function composeSupergraph(config: SupergraphConfig, options: ComposeOptions = {}): Promise<Composed> {
  const services = await Promise.all(
    config.subgraphs.map(async (subgraph) => ({
      name: subgraph.name,
      url: options.routingUrls?.[subgraph.name] ?? subgraph.routingUrl,
      typeDefs: parse(await loadSdl(subgraph, options.timeoutMs ?? 10_000)),
    })),
  );
  const result = composeServices(services);
  if (result.errors || !result.supergraphSdl) {
    const lines = (result.errors ?? []).map((error) => error.message);
    throw new Error(`composition failed:\n${lines.join('\n')}`);
  }
  return { supergraphSdl: result.supergraphSdl, hints: (result.hints ?? []).map((hint) => hint.toString()) };
}

async function loadSdl(subgraph: SubgraphConfig, timeoutMs: number): Promise<string> {
  if ('file' in subgraph.schema) return readFileSync(subgraph.schema.file, 'utf8');
  const { subgraphUrl, introspectionHeaders } = subgraph.schema;
  // The query Rover sends: `_service { sdl }` keeps the federation directives that standard introspection drops.
  const response = await fetch(subgraphUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...introspectionHeaders },
    body: JSON.stringify({ query: 'query SubgraphIntrospectQuery { _service { sdl } }' }),
    signal: AbortSignal.timeout(timeoutMs),
  }).catch((error: Error) => {
    throw new Error(`subgraph ${subgraph.name}: ${subgraphUrl} did not answer (${error.message})`);
  });
  const body = (await response.json().catch(() => undefined)) as { data?: { _service?: { sdl?: string } } } | undefined;
  const sdl = body?.data?._service?.sdl;
  if (!response.ok || typeof sdl !== 'string') {
    throw new Error(`subgraph ${subgraph.name}: ${subgraphUrl} answered ${response.status} without _service { sdl }`);
  }
  return sdl;
}
