/**
 * The gateway's configuration (the README's "Configuration" table): the environment, parsed once into a frozen,
 * typed Config. A bad value throws a ConfigError whose message is one line naming the variable
 * and what it accepts; main.ts prints it and exits.
 */

export type Plan = 'free' | 'pro' | 'business' | 'enterprise';
export type PetLookup = 'auto' | 'list' | 'legacy';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
/** LANDING_PAGE; `production` (Apollo's production page) is only the default under NODE_ENV=production. */
export type LandingPage = 'sandbox' | 'graphiql' | 'none' | 'production';

/** One client-side budget: `count` requests per `windowMs`. */
export interface RateWindow {
  readonly count: number;
  readonly windowMs: number;
}

export interface Config {
  readonly port: number;
  /** The address the gateway listens on. */
  readonly host: string;
  /** Upstream base address ending in /v1; undefined means "start the embedded reference store". */
  readonly petstoreBaseUrl: string | undefined;
  readonly apiKey: string | undefined;
  readonly plan: Plan;
  /** The budget windows in force; empty when throttling is `off`. */
  readonly rateLimits: readonly RateWindow[];
  readonly maxWaitMs: number;
  readonly timeoutMs: number;
  /** How long a per-key upstream GET answer is served again; 0 = no cache (identical GETs in flight are still shared). */
  readonly cacheTtlMs: number;
  /** How old a key's answer may be served instead of RATE_LIMITED or UPSTREAM_UNAVAILABLE; 0 = never. */
  readonly staleTtlMs: number;
  /**
   * Bytes of upstream answers kept in process for the cache and stale answers; the pets lookups learn
   * take a quarter as much again, refused keys an eighth. An answer over an eighth is never kept.
   */
  readonly cacheSizeBytes: number;
  /** Share identical upstream GETs in flight per key (default true; off only to measure what it saves). */
  readonly coalesce: boolean;
  readonly petLookup: PetLookup;
  /** Longest Retry-After or X-RateLimit-Reset believed from the upstream; longer ones are clamped. */
  readonly maxRetryAfterMs: number;
  /** A key's budget state idle this long is forgotten (never while a pause or spent window is in force). */
  readonly keyIdleMs: number;
  /** Keys whose state is held at most (budget, quotas, refusals). */
  readonly maxKeys: number;
  /** Connections kept to the upstream; past them, requests of all keys take turns. */
  readonly upstreamConnections: number;
  /** Of those, what one API key may hold at once, so slow answers for one key never hold another's. */
  readonly upstreamConnectionsPerKey: number;
  /** Requests one client may have waiting for one API key; past it, RATE_LIMITED at once. */
  readonly maxQueuedPerClient: number;
  /**
   * How long shutdown waits for requests in flight before it closes their connections; by default
   * as long as a request may take (PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT) plus DRAIN_MARGIN_MS.
   */
  readonly drainGraceMs: number;
  /** Secret cursors are sealed with; undefined: shared through Redis when there is one, else random per process. */
  readonly cursorSecret: string | undefined;
  /** The Redis the replicas share (one server, a Cluster, or behind Sentinel); undefined: none, all in process. */
  readonly redis: RedisTarget | undefined;
  readonly production: boolean;
  /** PETSTORE_DEMO=true: the embedded demo store may run under NODE_ENV=production. */
  readonly demo: boolean;
  /** NODE_ENV=development: stack traces and unmasked errors in responses. */
  readonly development: boolean;
  readonly introspection: boolean;
  readonly logLevel: LogLevel;
  /** What a browser gets at GET /graphql. */
  readonly landingPage: LandingPage;
  readonly limits: OperationLimits;
  readonly http: HttpLimits;
  /** Origins whose pages may call the gateway from a browser, or '*' for any. */
  readonly corsOrigins: readonly string[] | '*';
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  readonly metricsToken: string | undefined;
  /** A request header that names the client, for the fair share of a shared key; unset: the remote address. */
  readonly clientIdHeader: string | undefined;
  /** OpenTelemetry tracing, on only when an OTLP endpoint is configured (the standard OTEL_* variables). */
  readonly tracing: TracingConfig | undefined;
  /** Trusted documents (PERSISTED_DOCUMENTS, PERSISTED_DOCUMENTS_ONLY); undefined: no manifest. */
  readonly persistedDocuments: PersistedDocumentsConfig | undefined;
}

/** Where the persisted-documents manifest is, and whether only its documents may run. */
export interface PersistedDocumentsConfig {
  /** The manifest, `{ "sha256:<hex>": "<document>" }` as graphql-codegen's client preset writes it. */
  readonly path: string;
  /** Only listed documents run (a freeform one must be the exact text of one); APQ registration is off. */
  readonly only: boolean;
}

/** `host:port` of a Redis Cluster seed node or a sentinel. */
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/**
 * Where the shared state lives. Credentials: in REDIS_URL itself, or REDIS_USERNAME/REDIS_PASSWORD
 * (which win over the URL's). TLS: `rediss://` for one server; for a Cluster or Sentinel, whose
 * nodes are plain `host:port` lists, the REDIS_TLS switch (one switch for every node, sentinels
 * included: a deployment whose data nodes speak TLS but whose sentinels do not is not supported).
 */
export type RedisTarget =
  | { readonly mode: 'single'; readonly url: string; readonly auth: RedisAuth; readonly tls: boolean }
  | { readonly mode: 'cluster'; readonly nodes: readonly RedisNode[]; readonly auth: RedisAuth; readonly tls: boolean }
  | {
      readonly mode: 'sentinel';
      readonly sentinels: readonly RedisNode[];
      readonly master: string;
      readonly auth: RedisAuth;
      readonly tls: boolean;
    };

export interface RedisAuth {
  readonly username?: string;
  readonly password?: string;
}

/**
 * What the gateway decides about tracing itself. The exporter and the SDK read the rest of OTEL_*
 * (endpoint, headers, timeout, sampler, batch sizes) themselves, as the OpenTelemetry specification
 * describes them.
 */
export interface TracingConfig {
  /** The resource's service.name (OTEL_SERVICE_NAME). */
  readonly serviceName: string;
}

/** How long a client may take, and how many may be connected: a slow or greedy client cannot hold the process. */
export interface HttpLimits {
  /** The whole request head must arrive within this. */
  readonly headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections accepted; past it, new ones are closed at once. */
  readonly maxConnections: number;
}

/** What one GraphQL request may ask for, checked before it runs (no upstream call for a refused one). */
export interface OperationLimits {
  readonly maxDepth: number;
  readonly maxAliases: number;
  readonly maxTokens: number;
  readonly maxDirectives: number;
  /** graphql-armor's generic cost (objects 2, scalars 1, ×1.5 per level). */
  readonly maxCost: number;
  /** Largest share of the key's smallest window one operation may be estimated to spend upstream. */
  readonly maxBudgetShare: number;
  readonly maxBodyBytes: number;
  readonly allowBatchedRequests: boolean;
}

/** The origins Apollo Sandbox calls from: embedded on a landing page, and in Apollo Studio. */
export const SANDBOX_ORIGINS: readonly string[] = Object.freeze([
  'https://sandbox.embed.apollographql.com',
  'https://studio.apollographql.com',
]);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The plan table of the spec, as windows. */
export const PLAN_LIMITS: Readonly<Record<Exclude<Plan, 'enterprise'>, readonly RateWindow[]>> = Object.freeze({
  free: windows([60, 60_000], [1_000, 86_400_000]),
  pro: windows([300, 60_000], [10_000, 86_400_000]),
  business: windows([1_000, 60_000], [100_000, 86_400_000]),
});

function windows(...pairs: [count: number, windowMs: number][]): readonly RateWindow[] {
  return Object.freeze(pairs.map(([count, windowMs]) => Object.freeze({ count, windowMs })));
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * What the default SHUTDOWN_GRACE adds to the longest a request may take: time to read a request
 * already on the wire at the signal, and to write its answer.
 */
export const DRAIN_MARGIN_MS = 5_000;

export function parseConfig(env: Env): Config {
  const plan = oneOf(env, 'PETSTORE_PLAN', ['free', 'pro', 'business', 'enterprise'], 'free');
  const production = env.NODE_ENV === 'production';
  const maxWaitMs = duration(env, 'PETSTORE_MAX_WAIT', '10s');
  const timeoutMs = duration(env, 'PETSTORE_TIMEOUT', '10s', 1);
  const config: Config = {
    port: parsePort(env),
    // Loopback: the gateway forwards a server key, so reaching it from the network is a choice to make.
    host: parseHost(env),
    petstoreBaseUrl: parseBaseUrl(env),
    apiKey: nonEmpty(env, 'PETSTORE_API_KEY'),
    plan,
    rateLimits: parseRateLimits(env, plan),
    maxWaitMs,
    timeoutMs,
    cacheTtlMs: duration(env, 'PETSTORE_CACHE_TTL', '0s'),
    staleTtlMs: duration(env, 'PETSTORE_STALE_TTL', '0s'),
    cacheSizeBytes: size(env, 'PETSTORE_CACHE_SIZE', '32mb', MB, 1024 * MB),
    coalesce: parseBoolean(env, 'PETSTORE_COALESCE', true),
    petLookup: oneOf(env, 'PET_LOOKUP', ['auto', 'list', 'legacy'], 'auto'),
    maxRetryAfterMs: duration(env, 'PETSTORE_MAX_RETRY_AFTER', '1h', 1_000),
    cursorSecret: parseSecret(env, 'CURSOR_SECRET'),
    keyIdleMs: duration(env, 'PETSTORE_KEY_IDLE_TTL', '5m', 1_000),
    maxKeys: integer(env, 'PETSTORE_MAX_KEYS', 10_000, 100, 10_000_000),
    ...parseUpstreamConnections(env),
    maxQueuedPerClient: integer(env, 'MAX_QUEUED_PER_CLIENT', 100, 1, 1_000_000),
    // A request is answered by PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT after it began (its operation's
    // deadline); a shorter grace would cut off a createPet the upstream has already carried out.
    drainGraceMs: duration(env, 'SHUTDOWN_GRACE', `${Math.min(maxWaitMs + timeoutMs + DRAIN_MARGIN_MS, 86_400_000)}ms`),
    redis: parseRedisTarget(env),
    production,
    demo: parseBoolean(env, 'PETSTORE_DEMO', false),
    development: env.NODE_ENV === 'development',
    introspection: parseBoolean(env, 'INTROSPECTION', !production),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    landingPage: parseLandingPage(env, production),
    limits: Object.freeze({
      maxDepth: integer(env, 'MAX_DEPTH', 6, 1, 100),
      // graphql-armor's default is 15; 100 keeps a router's or client's batch of 100 pet lookups in one operation.
      maxAliases: integer(env, 'MAX_ALIASES', 100, 1, 10_000),
      // graphql-armor's default is 1,000; 100 aliased lookups with a few fields each take about 1,500.
      maxTokens: integer(env, 'MAX_TOKENS', 2_000, 50, 1_000_000),
      maxDirectives: integer(env, 'MAX_DIRECTIVES', 50, 1, 10_000),
      maxCost: integer(env, 'MAX_COST', 5_000, 1, 10_000_000),
      maxBudgetShare: fraction(env, 'MAX_BUDGET_SHARE', 0.25),
      maxBodyBytes: size(env, 'MAX_BODY_SIZE', '256kb'),
      allowBatchedRequests: parseBoolean(env, 'ALLOW_BATCHED_REQUESTS', false),
    }),
    http: parseHttpLimits(env),
    corsOrigins: parseCorsOrigins(env),
    metricsToken: parseSecret(env, 'METRICS_TOKEN'),
    clientIdHeader: parseHeaderName(env, 'CLIENT_ID_HEADER'),
    tracing: parseTracing(env),
    persistedDocuments: parsePersistedDocuments(env),
  };
  return Object.freeze(config);
}

function value(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === '' ? undefined : raw;
}

function nonEmpty(env: Env, name: string): string | undefined {
  return value(env, name);
}

function oneOf<T extends string>(env: Env, name: string, accepted: readonly T[], fallback: T): T {
  const raw = value(env, name) ?? fallback;
  if (!accepted.includes(raw as T)) throw new ConfigError(`${name} must be one of ${accepted.join(', ')}`);
  return raw as T;
}

function parseLandingPage(env: Env, production: boolean): LandingPage {
  if (production && value(env, 'LANDING_PAGE') === undefined) return 'production';
  return oneOf(env, 'LANDING_PAGE', ['sandbox', 'graphiql', 'none'], 'sandbox');
}

function parsePort(env: Env): number {
  const raw = value(env, 'PORT') ?? '4000';
  const port = /^[0-9]{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(port >= 0 && port <= 65_535)) throw new ConfigError('PORT must be an integer from 0 to 65535');
  return port;
}

function parseBaseUrl(env: Env): string | undefined {
  const raw = value(env, 'PETSTORE_BASE_URL');
  if (raw === undefined) return undefined;
  const accepts = 'PETSTORE_BASE_URL must be an http(s) URL ending in /v1, without credentials, query or fragment';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(accepts);
  }
  const path = url.pathname.replace(/\/+$/, '');
  if (!['http:', 'https:'].includes(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(accepts);
  }
  if (!path.endsWith('/v1')) throw new ConfigError(accepts);
  return `${url.origin}${path}`;
}

function parseHost(env: Env): string {
  const raw = value(env, 'HOST') ?? '127.0.0.1';
  if (!/^[A-Za-z0-9.:[\]_-]{1,253}$/.test(raw)) {
    throw new ConfigError('HOST must be a host name or an IP address to listen on, e.g. 127.0.0.1 or 0.0.0.0');
  }
  return raw.replace(/^\[(.*)\]$/, '$1');
}

function parseHttpLimits(env: Env): HttpLimits {
  const headersTimeoutMs = duration(env, 'HEADERS_TIMEOUT', '10s', 100);
  const requestTimeoutMs = duration(env, 'REQUEST_TIMEOUT', '30s', 100);
  // Node refuses a head timeout longer than the whole request's.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT');
  }
  return Object.freeze({
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: duration(env, 'KEEP_ALIVE_TIMEOUT', '5s', 100),
    maxConnections: integer(env, 'MAX_CONNECTIONS', 1_000, 1, 1_000_000),
  });
}

/** The pool to the upstream, and one key's share of it (a quarter unless set). */
function parseUpstreamConnections(env: Env): Pick<Config, 'upstreamConnections' | 'upstreamConnectionsPerKey'> {
  const upstreamConnections = integer(env, 'UPSTREAM_CONNECTIONS', 64, 1, 10_000);
  const perKey = integer(
    env,
    'UPSTREAM_CONNECTIONS_PER_KEY',
    Math.max(1, Math.floor(upstreamConnections / 4)),
    1,
    10_000,
  );
  if (perKey > upstreamConnections) {
    throw new ConfigError('UPSTREAM_CONNECTIONS_PER_KEY must not be more than UPSTREAM_CONNECTIONS');
  }
  return { upstreamConnections, upstreamConnectionsPerKey: perKey };
}

function parseCorsOrigins(env: Env): readonly string[] | '*' {
  const raw = value(env, 'CORS_ORIGINS');
  if (raw === undefined) return SANDBOX_ORIGINS;
  if (raw === '*') return '*';
  const accepts = 'CORS_ORIGINS must be * or a comma list of origins such as https://app.example.com';
  return Object.freeze(
    raw.split(',').map((part) => {
      let url: URL;
      try {
        url = new URL(part.trim());
      } catch {
        throw new ConfigError(accepts);
      }
      if (!['http:', 'https:'].includes(url.protocol) || url.origin !== part.trim().replace(/\/$/, '')) {
        throw new ConfigError(accepts);
      }
      return url.origin;
    }),
  );
}

function parseHeaderName(env: Env, name: string): string | undefined {
  const raw = value(env, name);
  if (raw === undefined) return undefined;
  // RFC 9110 section 5.1: a field name is a token.
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/.test(raw)) throw new ConfigError(`${name} must be an HTTP header name`);
  return raw.toLowerCase();
}

/**
 * Tracing is off unless an OTLP endpoint is set (for traces or for all signals), the SDK is not
 * disabled and the traces exporter is not `none`: a gateway nobody collects spans from does no
 * tracing work at all. Only OTLP over HTTP is exported.
 */
function parseTracing(env: Env): TracingConfig | undefined {
  const disabled = parseBoolean(env, 'OTEL_SDK_DISABLED', false);
  const exporter = oneOf(env, 'OTEL_TRACES_EXPORTER', ['otlp', 'none'], 'otlp');
  const endpoint = [
    parseHttpUrl(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
    parseHttpUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT'),
  ].find((url) => url !== undefined);
  const serviceName = value(env, 'OTEL_SERVICE_NAME') ?? 'petstore-graphql-gateway';
  if (disabled || exporter === 'none' || endpoint === undefined) return undefined;
  return Object.freeze({ serviceName });
}

function parseHttpUrl(env: Env, name: string): string | undefined {
  const raw = value(env, name);
  if (raw === undefined) return undefined;
  try {
    if (['http:', 'https:'].includes(new URL(raw).protocol)) return raw;
  } catch {}
  throw new ConfigError(`${name} must be an http(s) URL, e.g. http://localhost:4318`);
}

/**
 * The manifest's path only: the file is read once by the gateway at start (edge/trusted-documents),
 * so parsing the environment stays free of I/O. Safelisting with no list would refuse everything.
 */
function parsePersistedDocuments(env: Env): PersistedDocumentsConfig | undefined {
  const path = value(env, 'PERSISTED_DOCUMENTS');
  const only = parseBoolean(env, 'PERSISTED_DOCUMENTS_ONLY', false);
  if (path === undefined) {
    if (only) {
      throw new ConfigError(
        'PERSISTED_DOCUMENTS_ONLY=true needs PERSISTED_DOCUMENTS, the path of a persisted-documents manifest (npm run codegen writes one)',
      );
    }
    return undefined;
  }
  return Object.freeze({ path, only });
}

function parseSecret(env: Env, name: string): string | undefined {
  const raw = value(env, name);
  if (raw !== undefined && raw.length < 16) throw new ConfigError(`${name} must be at least 16 characters`);
  return raw;
}

function parseRedisUrl(env: Env): string | undefined {
  const raw = value(env, 'REDIS_URL');
  if (raw === undefined) return undefined;
  try {
    if (['redis:', 'rediss:'].includes(new URL(raw).protocol)) return raw;
  } catch {}
  throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL');
}

/** The variable that chooses each Redis mode (one of them at most may be set). */
export const REDIS_VARIABLE = {
  single: 'REDIS_URL',
  cluster: 'REDIS_CLUSTER_NODES',
  sentinel: 'REDIS_SENTINELS',
} as const satisfies Record<RedisTarget['mode'], string>;

function parseRedisTarget(env: Env): RedisTarget | undefined {
  const set = Object.values(REDIS_VARIABLE).filter((name) => value(env, name) !== undefined);
  if (set.length > 1) {
    throw new ConfigError(`${set[0]} and ${set[1]} are both set: choose one Redis (one server, a Cluster or Sentinel)`);
  }
  const username = value(env, 'REDIS_USERNAME');
  const password = value(env, 'REDIS_PASSWORD');
  const auth: RedisAuth = { ...(username ? { username } : {}), ...(password ? { password } : {}) };
  const tlsSwitch = value(env, 'REDIS_TLS') === undefined ? undefined : parseBoolean(env, 'REDIS_TLS', false);
  const master = value(env, 'REDIS_SENTINEL_MASTER');
  const mode = set[0];
  if (master !== undefined && mode !== 'REDIS_SENTINELS') {
    throw new ConfigError('REDIS_SENTINEL_MASTER is set without REDIS_SENTINELS: set both, or neither');
  }
  if (mode === undefined) {
    const stray = ['REDIS_USERNAME', 'REDIS_PASSWORD', 'REDIS_TLS'].find((name) => value(env, name) !== undefined);
    if (stray)
      throw new ConfigError(`${stray} is set without a Redis: set REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS`);
    return undefined;
  }
  if (mode === 'REDIS_URL') {
    const url = parseRedisUrl(env) as string;
    // The URL's scheme says TLS; a REDIS_TLS that contradicts it would leave the operator guessing which won.
    const tls = new URL(url).protocol === 'rediss:';
    if (tlsSwitch !== undefined && tlsSwitch !== tls) {
      throw new ConfigError(
        'REDIS_TLS contradicts REDIS_URL: use rediss:// for TLS, redis:// without, and leave REDIS_TLS unset',
      );
    }
    return Object.freeze({ mode: 'single', url, auth, tls });
  }
  const tls = tlsSwitch ?? false;
  if (mode === 'REDIS_CLUSTER_NODES') {
    return Object.freeze({ mode: 'cluster', nodes: parseNodes(env, mode), auth, tls });
  }
  if (master === undefined)
    throw new ConfigError('REDIS_SENTINEL_MASTER must be set with REDIS_SENTINELS: the name Sentinel monitors');
  return Object.freeze({ mode: 'sentinel', sentinels: parseNodes(env, mode), master, auth, tls });
}

function parseNodes(env: Env, name: string): readonly RedisNode[] {
  const accepts = `${name} must be a comma list of host:port, e.g. 10.0.0.1:6379,10.0.0.2:6379`;
  const nodes = (value(env, name) as string).split(',').map((part): RedisNode => {
    // host:port, or [v6]:port.
    const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(part.trim());
    const port = Number(match?.[2]);
    if (!match || !(port >= 1 && port <= 65_535)) throw new ConfigError(accepts);
    return Object.freeze({ host: (match[1] as string).replace(/^\[|\]$/g, ''), port });
  });
  return Object.freeze(nodes);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  const parsed = /^[0-9]{1,10}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(parsed >= min && parsed <= max)) throw new ConfigError(`${name} must be an integer from ${min} to ${max}`);
  return parsed;
}

function fraction(env: Env, name: string, fallback: number): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  const parsed = /^(0(\.[0-9]+)?|1(\.0+)?)$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(parsed > 0 && parsed <= 1))
    throw new ConfigError(`${name} must be a fraction greater than 0, at most 1 (e.g. 0.25)`);
  return parsed;
}

const MB = 1024 * 1024;
const SIZE_UNITS: Readonly<Record<string, number>> = { b: 1, kb: 1024, mb: MB };

function size(env: Env, name: string, fallback: string, min = 1024, max = 64 * MB): number {
  const match = /^([0-9]{1,9})(b|kb|mb)$/i.exec(value(env, name) ?? fallback);
  const bytes = match ? Number(match[1]) * (SIZE_UNITS[(match[2] as string).toLowerCase()] as number) : Number.NaN;
  if (!(bytes >= min && bytes <= max)) {
    const named = (n: number) => (n >= MB ? `${n / MB}mb` : `${n / 1024}kb`);
    throw new ConfigError(
      `${name} must be a size in b, kb or mb such as ${fallback}, from ${named(min)} to ${named(max)}`,
    );
  }
  return bytes;
}

function parseBoolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = value(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (['true', '1', 'yes'].includes(raw)) return true;
  if (['false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false`);
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `500ms`, `10s`, `1m`, `1h`, `1d` (a unit is required: a bare number is ambiguous). */
export function parseDuration(text: string): number | undefined {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * (UNITS[match[2] as string] as number);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

function duration(env: Env, name: string, fallback: string, minimum = 0): number {
  const ms = parseDuration(value(env, name) ?? fallback);
  if (ms === undefined || ms < minimum || ms > 86_400_000) {
    throw new ConfigError(`${name} must be a duration such as 500ms, 10s or 1m (at most 1d)`);
  }
  return ms;
}

/** The largest count of one PETSTORE_RATE_LIMITS window: the nine digits it has always accepted, far above any plan. */
export const MAX_RATE_COUNT = 999_999_999;

function parseRateLimits(env: Env, plan: Plan): readonly RateWindow[] {
  const raw = value(env, 'PETSTORE_RATE_LIMITS');
  if (raw === undefined) {
    if (plan === 'enterprise') {
      throw new ConfigError('PETSTORE_RATE_LIMITS must be set for PETSTORE_PLAN=enterprise (e.g. 5000/1m,500000/1d)');
    }
    return PLAN_LIMITS[plan];
  }
  if (raw.toLowerCase() === 'off') return [];
  const accepts = 'PETSTORE_RATE_LIMITS must be off or a list of count/window, e.g. 60/1m,1000/1d or 5/1s';
  const pairs = raw.split(',').map((part): [number, number] => {
    const [count, window, extra] = part.trim().split('/');
    const windowMs = window === undefined ? undefined : parseDuration(/^[0-9]/.test(window) ? window : `1${window}`);
    const valid = extra === undefined && /^[0-9]+$/.test(count ?? '') && Number(count) >= 1;
    if (!valid || windowMs === undefined || windowMs < 1) throw new ConfigError(accepts);
    // The format is right and only the number is not: saying the format again would not help.
    if (Number(count) > MAX_RATE_COUNT) {
      throw new ConfigError(
        `PETSTORE_RATE_LIMITS count ${count} is too large: at most ${MAX_RATE_COUNT} requests per window (or off)`,
      );
    }
    return [Number(count), windowMs];
  });
  return windows(...pairs.sort((a, b) => a[1] - b[1]));
}
