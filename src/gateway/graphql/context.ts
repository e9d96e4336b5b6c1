/**
 * The per-request context: the credential, the operation's upstream budget and deadlines, the REST
 * client bound to them, the key's cursors, and loaders made for this request only.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { type DocumentNode, type GraphQLResolveInfo, Kind, parse, responsePathAsArray } from 'graphql';
import type { Config } from '../../config.js';
import { type LineLogger, type Logger, requestLogger } from '../observability/logger.js';
import type { OperationTrace } from '../observability/tracing.js';
import type { CancelSignal } from '../shared/cancel.js';
import { keyIdOf } from '../shared/key-id.js';
import type { RestClient } from '../upstream/client.js';
import type { BudgetView } from '../upstream/limits/limiter.js';
import { createOperation, type Operation } from '../upstream/operation.js';
import { missingCredential, withClientErrors } from './errors.js';
import type { CursorCodec, Cursors } from './ids.js';
import { createPetLookups, type LookupStats, type PetLoader, type PetLoaderOptions } from './loaders/pet-loader.js';

export interface GatewayContext {
  /** The API key every upstream request of this operation carries ('' for a metadata-only operation). */
  readonly key: string;
  /** The operation's budget, deadlines and client: every upstream request it causes draws from it. */
  readonly operation: Operation;
  /** The shared REST client, bound to this operation, whose list pages answer `petLoader`. */
  readonly client: RestClient;
  readonly cursors: Cursors;
  readonly petLoader: PetLoader;
  /** Lines of this request carry its id (`reqId`). */
  readonly logger: LineLogger;
  /** The key's budget as far as the gateway knows it now (`rateLimit`, `extensions.rateLimit`). */
  budget(): BudgetView;
  /** Fields answered from earlier answers, because the upstream could not be asked (`extensions.stale`). */
  readonly stale: StaleNote[];
  /** How old the answer a loaded pet came from is, when it was served stale. */
  petStaleMs(id: string): number | undefined;
  /** The request's span, when tracing is on. */
  readonly trace: OperationTrace | undefined;
  /** `performance.now()` when the context was made: the start of the operation's logged duration. */
  readonly startedAt: number;
}

export interface StaleNote {
  readonly path: readonly (string | number)[];
  readonly ageSeconds: number;
}

/** Notes that the field at `path` was answered from an answer `staleMs` old. */
export function noteStale(
  context: GatewayContext,
  path: GraphQLResolveInfo['path'],
  staleMs: number | undefined,
): void {
  if (staleMs === undefined) return;
  context.stale.push({ path: responsePathAsArray(path), ageSeconds: Math.round(staleMs / 100) / 10 });
}

export interface ContextDeps {
  readonly config: Pick<Config, 'apiKey' | 'petLookup' | 'maxWaitMs' | 'timeoutMs'>;
  readonly client: RestClient;
  readonly cursors: CursorCodec;
  readonly logger: Logger;
  readonly lookupStats: LookupStats;
  readonly now: () => number;
  /** Upstream requests one operation may send (undefined: no cap). */
  readonly maxUpstreamRequests: number | undefined;
  /** The key's budget by key digest, as the limiter knows it. */
  readonly describeBudget: (keyId: string) => BudgetView;
  /** Names the client of a request that uses the server key (CLIENT_ID_HEADER); unset: the remote address. */
  readonly clientIdHeader?: string | undefined;
  /** Told the size of every pet lookup batch (metrics). */
  readonly onBatch?: (size: number) => void;
  /** What the key's list pages showed (PETSTORE_CACHE_TTL, PETSTORE_STALE_TTL), when either is on. */
  readonly petMemory?: PetLoaderOptions['memory'];
}

export interface RequestInfo {
  readonly headers: IncomingHttpHeaders;
  /** The operation's text, when the request carries one. */
  readonly query?: string | undefined;
  readonly requestId?: string | undefined;
  /** Aborted when the client has gone. */
  readonly signal?: CancelSignal | undefined;
  /** The remote address, who the client is when no CLIENT_ID_HEADER names it. */
  readonly remoteAddress?: string | undefined;
  /** The request's span, when tracing is on: the operation's upstream requests become its children. */
  readonly trace?: OperationTrace | undefined;
}

/**
 * A client's bearer key is forwarded; otherwise the configured key; otherwise HTTP 401 before any
 * upstream call, unless the operation only asks for schema metadata (`_service { sdl }` for a
 * router or Rover, introspection), which needs no upstream and so no key (`key` is then '').
 */
export function createContext(deps: ContextDeps, request: RequestInfo): GatewayContext {
  const { headers, query, requestId } = request;
  const own = credential(headers.authorization);
  const key = own ?? deps.config.apiKey ?? (isMetadataOnly(query) ? '' : undefined);
  if (key === undefined) throw missingCredential();
  // Clients sharing the server key take turns; one with its own key is its key's only client.
  const named = deps.clientIdHeader === undefined ? undefined : headers[deps.clientIdHeader];
  const clientId = own !== undefined ? '' : ((Array.isArray(named) ? named[0] : named) ?? request.remoteAddress ?? '');
  // Lines logged for this request name it, as its upstream requests do (X-Request-Id).
  const logger = requestId === undefined ? deps.logger : requestLogger(deps.logger, requestId);
  const operation = createOperation({
    requestId,
    logger,
    signal: request.signal,
    clientId,
    maxWaitMs: deps.config.maxWaitMs,
    timeoutMs: deps.config.timeoutMs,
    maxRequests: deps.maxUpstreamRequests,
    now: deps.now(),
    span: request.trace?.span,
  });
  const keyId = keyIdOf(key);
  const lookups = createPetLookups({
    client: withClientErrors(deps.client.forOperation(operation)),
    key,
    keyId,
    operation,
    memory: deps.petMemory,
    strategy: deps.config.petLookup,
    stats: deps.lookupStats,
    now: deps.now,
    ...(deps.onBatch ? { onBatch: deps.onBatch } : {}),
  });
  return {
    key,
    operation,
    client: lookups.client,
    cursors: deps.cursors.forKey(keyId),
    logger,
    petLoader: lookups.loader,
    budget: () => deps.describeBudget(keyId),
    stale: [],
    petStaleMs: (id) => lookups.staleMs(id),
    trace: request.trace,
    startedAt: performance.now(),
  };
}

/**
 * The digest of the key a request's operation will use (that of '' when it has none), or undefined
 * when its Authorization header is unreadable (the operation will be refused).
 */
export function requestKeyId(headers: IncomingHttpHeaders, apiKey: string | undefined): string | undefined {
  let own: string | undefined;
  try {
    own = credential(headers.authorization);
  } catch {
    return undefined;
  }
  return keyIdOf(own ?? apiKey ?? '');
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
