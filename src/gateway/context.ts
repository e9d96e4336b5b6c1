/** The per-request context: the credential, the REST client, and loaders made for this request only. */

import type { IncomingHttpHeaders } from 'node:http';
import { type DocumentNode, Kind, parse } from 'graphql';
import type { Config } from '../config.js';
import { missingCredential } from './errors.js';
import { createPetLookups, type LookupStats, type PetLoader } from './loaders/pet-loader.js';
import type { Logger } from './logger.js';
import type { RestClient } from './rest/client.js';

export interface GatewayContext {
  /** The API key every upstream request of this operation carries ('' for a metadata-only operation). */
  readonly key: string;
  /** The shared REST client, wrapped for this request so that its list pages prime `petLoader`. */
  readonly client: RestClient;
  readonly petLoader: PetLoader;
  readonly logger: Logger;
}

export interface ContextDeps {
  readonly config: Pick<Config, 'apiKey' | 'petLookup'>;
  readonly client: RestClient;
  readonly logger: Logger;
  readonly lookupStats: LookupStats;
  readonly now: () => number;
  /** Told the size of every pet lookup batch (metrics). */
  readonly onBatch?: (size: number) => void;
}

/**
 * A client's bearer key is forwarded; otherwise the configured key; otherwise HTTP 401 before any
 * upstream call, unless the operation only asks for schema metadata (`_service { sdl }` for a
 * router or Rover, introspection), which needs no upstream and so no key (`key` is then '').
 */
export function createContext(
  deps: ContextDeps,
  headers: IncomingHttpHeaders,
  query?: string,
  requestId?: string,
): GatewayContext {
  const key = credential(headers.authorization) ?? deps.config.apiKey ?? (isMetadataOnly(query) ? '' : undefined);
  if (key === undefined) throw missingCredential();
  // Lines logged for this request name it, as its upstream requests do (X-Request-Id).
  const logger = requestId === undefined ? deps.logger : deps.logger.child({ reqId: requestId });
  const client = requestId === undefined ? deps.client : deps.client.forRequest({ requestId, logger });
  const lookups = createPetLookups({
    client,
    key,
    strategy: deps.config.petLookup,
    stats: deps.lookupStats,
    now: deps.now,
    ...(deps.onBatch ? { onBatch: deps.onBatch } : {}),
  });
  return { key, client: lookups.client, logger, petLoader: lookups.loader };
}

const METADATA_FIELDS = new Set(['_service', '__schema', '__type', '__typename']);

/** Whether every root field of every operation in `query` is schema metadata. */
function isMetadataOnly(query: string | undefined): boolean {
  if (query === undefined || query.length > 100_000) return false;
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: 10_000 });
  } catch {
    return false;
  }
  const operations = document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  return (
    operations.length > 0 &&
    operations.every((operation) =>
      operation.selectionSet.selections.every(
        (selection) => selection.kind === Kind.FIELD && METADATA_FIELDS.has(selection.name.value),
      ),
    )
  );
}

function credential(header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  // The scheme is case-insensitive (RFC 9110 section 11.1); token68 characters only (RFC 6750 section 2.1).
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header);
  if (!match) throw missingCredential('Authorization must be "Bearer <API key>"');
  return match[1];
}
