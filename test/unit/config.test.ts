import { describe, expect, it } from 'vitest';
import { ConfigError, PLAN_LIMITS, parseConfig } from '../../src/config.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** The ConfigError that parsing `env` throws. */
function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    parseConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`parseConfig accepted ${JSON.stringify(env)}`);
}

/** Asserts that `env` is refused with one line that names `variable`. */
function expectRefused(env: Record<string, string | undefined>, variable: string): void {
  const error = configError(env);
  expect(error.name).toBe('ConfigError');
  expect(error.message).toContain(variable);
  expect(error.message).not.toContain('\n');
}

describe('parseConfig defaults', () => {
  it('gives the documented defaults for an empty environment', () => {
    expect(parseConfig({})).toEqual({
      port: 4000,
      host: '127.0.0.1',
      petstoreBaseUrl: undefined,
      apiKey: undefined,
      plan: 'free',
      rateLimits: [
        { count: 60, windowMs: MINUTE },
        { count: 1_000, windowMs: DAY },
      ],
      maxWaitMs: 10_000,
      timeoutMs: 10_000,
      cacheTtlMs: 0,
      staleTtlMs: 0,
      cacheSizeBytes: 32 * 1024 * 1024,
      coalesce: true,
      petLookup: 'auto',
      maxRetryAfterMs: 3_600_000,
      cursorSecret: undefined,
      keyIdleMs: 300_000,
      maxKeys: 10_000,
      upstreamConnections: 64,
      upstreamConnectionsPerKey: 16,
      maxQueuedPerClient: 100,
      drainGraceMs: 25_000,
      production: false,
      demo: false,
      development: false,
      introspection: true,
      logLevel: 'info',
      landingPage: 'sandbox',
      limits: {
        maxDepth: 6,
        maxAliases: 100,
        maxTokens: 2_000,
        maxDirectives: 50,
        maxCost: 5_000,
        maxBudgetShare: 0.25,
        maxBodyBytes: 256 * 1024,
        allowBatchedRequests: false,
      },
      http: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxConnections: 1_000 },
      corsOrigins: ['https://sandbox.embed.apollographql.com', 'https://studio.apollographql.com'],
      metricsToken: undefined,
      clientIdHeader: undefined,
      tracing: undefined,
    });
  });

  it.each([
    ['MAX_DEPTH', '0'],
    ['MAX_ALIASES', 'many'],
    ['MAX_TOKENS', '10'],
    ['MAX_COST', '-5'],
    ['MAX_BUDGET_SHARE', '1.5'],
    ['MAX_BUDGET_SHARE', '0'],
    ['MAX_BODY_SIZE', '10'],
    ['MAX_BODY_SIZE', '1gb'],
    ['PETSTORE_CACHE_SIZE', '512kb'],
    ['PETSTORE_CACHE_SIZE', '2048mb'],
    ['PETSTORE_CACHE_SIZE', '32'],
    ['ALLOW_BATCHED_REQUESTS', 'maybe'],
  ])('refuses %s=%s naming the variable', (name, raw) => {
    expect(() => parseConfig({ [name]: raw })).toThrow(new RegExp(`^${name} must`));
  });

  it('reads operation limits', () => {
    const { limits } = parseConfig({
      MAX_DEPTH: '10',
      MAX_BODY_SIZE: '1mb',
      MAX_BUDGET_SHARE: '0.5',
      ALLOW_BATCHED_REQUESTS: 'true',
    });
    expect(limits).toMatchObject({
      maxDepth: 10,
      maxBodyBytes: 1024 * 1024,
      maxBudgetShare: 0.5,
      allowBatchedRequests: true,
    });
  });

  it('treats empty and blank values as unset', () => {
    const config = parseConfig({
      PORT: '',
      PETSTORE_BASE_URL: '  ',
      PETSTORE_API_KEY: '',
      PETSTORE_PLAN: '',
      PETSTORE_RATE_LIMITS: ' ',
      PETSTORE_MAX_WAIT: '',
      PETSTORE_TIMEOUT: '',
      PET_LOOKUP: '',
      REDIS_URL: '',
      INTROSPECTION: '',
      LOG_LEVEL: '',
    });
    expect(config).toEqual(parseConfig({}));
  });

  it('returns a frozen object', () => {
    const config = parseConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  // BUG (src/config.ts): the Config is frozen only one level deep. Without PETSTORE_RATE_LIMITS its
  // rateLimits is the very array of PLAN_LIMITS (frozen itself only at the top), so a caller that writes to
  // config.rateLimits changes the plan table for every later parseConfig.
  it('returns a config whose rate-limit windows are frozen too', () => {
    const config = parseConfig({});
    expect(Object.isFrozen(config.rateLimits)).toBe(true);
    expect(config.rateLimits.every((window) => Object.isFrozen(window))).toBe(true);
  });

  it('ignores variables it does not know', () => {
    expect(parseConfig({ HOME: '/root', SOMETHING_ELSE: 'x' })).toEqual(parseConfig({}));
  });
});

describe('PORT', () => {
  it.each([
    ['0', 0],
    ['80', 80],
    ['65535', 65_535],
    [' 8080 ', 8080],
  ])('reads %j as %i', (value, port) => {
    expect(parseConfig({ PORT: value }).port).toBe(port);
  });

  it.each(['abc', '-1', '65536', '1.5', '80a', '99999999'])('refuses %j naming PORT', (value) => {
    expectRefused({ PORT: value }, 'PORT');
  });
});

describe('PETSTORE_BASE_URL', () => {
  it.each([
    ['http://localhost:4010/v1', 'http://localhost:4010/v1'],
    ['https://api.example.com/v1/', 'https://api.example.com/v1'],
    ['https://api.example.com/petstore/v1', 'https://api.example.com/petstore/v1'],
    ['HTTP://API.Example.com:80/v1', 'http://api.example.com/v1'],
  ])('reads %j as %j', (value, url) => {
    expect(parseConfig({ PETSTORE_BASE_URL: value }).petstoreBaseUrl).toBe(url);
  });

  it.each([
    'not a url',
    'http://localhost:4010',
    'http://localhost:4010/',
    'http://localhost:4010/v2',
    'http://localhost:4010/v10',
    'http://localhost:4010/v1/pets',
    'http://user:secret@localhost:4010/v1',
    'http://user@localhost:4010/v1',
    'http://localhost:4010/v1?key=secret',
    'http://localhost:4010/v1#top',
    'ftp://localhost/v1',
    'file:///v1',
  ])('refuses %j naming PETSTORE_BASE_URL', (value) => {
    expectRefused({ PETSTORE_BASE_URL: value }, 'PETSTORE_BASE_URL');
  });

  it('does not repeat credentials of a refused URL in its message', () => {
    expect(configError({ PETSTORE_BASE_URL: 'http://user:hunter2@localhost/v1' }).message).not.toContain('hunter2');
  });
});

describe('PETSTORE_API_KEY', () => {
  it('is the key, trimmed', () => {
    expect(parseConfig({ PETSTORE_API_KEY: ' abc123 ' }).apiKey).toBe('abc123');
  });
});

describe('PETSTORE_PLAN and PETSTORE_RATE_LIMITS', () => {
  it.each(['free', 'pro', 'business'] as const)('gives the %s plan its table windows', (plan) => {
    const config = parseConfig({ PETSTORE_PLAN: plan });
    expect(config.plan).toBe(plan);
    expect(config.rateLimits).toEqual(PLAN_LIMITS[plan]);
  });

  it('has the spec plan table as windows', () => {
    expect(PLAN_LIMITS).toEqual({
      free: [
        { count: 60, windowMs: MINUTE },
        { count: 1_000, windowMs: DAY },
      ],
      pro: [
        { count: 300, windowMs: MINUTE },
        { count: 10_000, windowMs: DAY },
      ],
      business: [
        { count: 1_000, windowMs: MINUTE },
        { count: 100_000, windowMs: DAY },
      ],
    });
  });

  it.each(['gold', 'Free', 'enterprise-plus'])('refuses the plan %j naming PETSTORE_PLAN', (value) => {
    expectRefused({ PETSTORE_PLAN: value }, 'PETSTORE_PLAN');
  });

  it('refuses enterprise without PETSTORE_RATE_LIMITS, naming both', () => {
    expectRefused({ PETSTORE_PLAN: 'enterprise' }, 'PETSTORE_RATE_LIMITS');
    expect(configError({ PETSTORE_PLAN: 'enterprise' }).message).toContain('enterprise');
  });

  it('takes enterprise with its own limits', () => {
    const config = parseConfig({ PETSTORE_PLAN: 'enterprise', PETSTORE_RATE_LIMITS: '5000/1m,500000/1d' });
    expect(config.plan).toBe('enterprise');
    expect(config.rateLimits).toEqual([
      { count: 5_000, windowMs: MINUTE },
      { count: 500_000, windowMs: DAY },
    ]);
  });

  it('parses 60/1m,1000/1d into windows sorted by length, whatever the order given', () => {
    const expected = [
      { count: 60, windowMs: MINUTE },
      { count: 1_000, windowMs: DAY },
    ];
    expect(parseConfig({ PETSTORE_RATE_LIMITS: '60/1m,1000/1d' }).rateLimits).toEqual(expected);
    expect(parseConfig({ PETSTORE_RATE_LIMITS: '1000/1d, 60/1m' }).rateLimits).toEqual(expected);
    expect(parseConfig({ PETSTORE_RATE_LIMITS: '1000/1d,10/1s,60/1m' }).rateLimits).toEqual([
      { count: 10, windowMs: 1_000 },
      ...expected,
    ]);
  });

  it('overrides the plan table', () => {
    expect(parseConfig({ PETSTORE_PLAN: 'pro', PETSTORE_RATE_LIMITS: '5/1s' }).rateLimits).toEqual([
      { count: 5, windowMs: 1_000 },
    ]);
  });

  it.each([
    ['5/1s', [{ count: 5, windowMs: 1_000 }]],
    ['5/s', [{ count: 5, windowMs: 1_000 }]],
    ['100/500ms', [{ count: 100, windowMs: 500 }]],
    ['2/1h', [{ count: 2, windowMs: 3_600_000 }]],
    ['30/1.5s', [{ count: 30, windowMs: 1_500 }]],
  ])('parses %j', (value, windows) => {
    expect(parseConfig({ PETSTORE_RATE_LIMITS: value }).rateLimits).toEqual(windows);
  });

  it.each(['off', 'OFF', ' off '])('reads %j as no client-side throttling', (value) => {
    expect(parseConfig({ PETSTORE_RATE_LIMITS: value }).rateLimits).toEqual([]);
    expect(parseConfig({ PETSTORE_PLAN: 'enterprise', PETSTORE_RATE_LIMITS: value }).rateLimits).toEqual([]);
  });

  it.each(['x/1m', '60', '60/', '/1m', '0/1m', '-5/1m', '1.5/1m', '60/1x', '60/0s', '60/1m;1000/1d', 'on'])(
    'refuses %j naming PETSTORE_RATE_LIMITS',
    (value) => {
      expectRefused({ PETSTORE_RATE_LIMITS: value }, 'PETSTORE_RATE_LIMITS');
    },
  );

  it('says a count over the largest accepted is too large, naming that largest, not the format', () => {
    expect(parseConfig({ PETSTORE_RATE_LIMITS: '999999999/1m' }).rateLimits).toEqual([
      { count: 999_999_999, windowMs: MINUTE },
    ]);
    for (const value of ['1000000000/1m', '60/1s,1000000000/1m', '00000000000000000000001000000000/1d']) {
      expect(configError({ PETSTORE_RATE_LIMITS: value }).message).toBe(
        `PETSTORE_RATE_LIMITS count ${value.split(',').at(-1)?.split('/')[0]} is too large: at most 999999999 requests per window (or off)`,
      );
    }
  });

  // BUG (src/config.ts parseRateLimits): each entry is split on '/' and only the first two parts are read,
  // so "60/1m/1d" is taken as 60/1m and the "/1d" is silently dropped instead of refused.
  it('refuses "60/1m/1d" naming PETSTORE_RATE_LIMITS', () => {
    expectRefused({ PETSTORE_RATE_LIMITS: '60/1m/1d' }, 'PETSTORE_RATE_LIMITS');
  });
});

describe('PETSTORE_MAX_WAIT and PETSTORE_TIMEOUT', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['1.5s', 1_500],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1d', DAY],
  ])('read %j as %i ms', (value, ms) => {
    expect(parseConfig({ PETSTORE_MAX_WAIT: value }).maxWaitMs).toBe(ms);
    expect(parseConfig({ PETSTORE_TIMEOUT: value }).timeoutMs).toBe(ms);
  });

  it('lets PETSTORE_MAX_WAIT be 0 (never wait for budget)', () => {
    expect(parseConfig({ PETSTORE_MAX_WAIT: '0s' }).maxWaitMs).toBe(0);
  });

  it.each(['0s', '0ms'])('refuses a PETSTORE_TIMEOUT of %j', (value) => {
    expectRefused({ PETSTORE_TIMEOUT: value }, 'PETSTORE_TIMEOUT');
  });

  it.each(['10', 'ten seconds', '10 s', '-1s', '1w', '2d', '10S'])(
    'refuses %j naming the variable (a unit is required, at most 1d)',
    (value) => {
      expectRefused({ PETSTORE_MAX_WAIT: value }, 'PETSTORE_MAX_WAIT');
      expectRefused({ PETSTORE_TIMEOUT: value }, 'PETSTORE_TIMEOUT');
    },
  );
});

describe('PET_LOOKUP', () => {
  it.each(['auto', 'list', 'legacy'] as const)('takes %s', (value) => {
    expect(parseConfig({ PET_LOOKUP: value }).petLookup).toBe(value);
  });

  it.each(['scan', 'get', 'LIST'])('refuses %j naming PET_LOOKUP and the accepted values', (value) => {
    expectRefused({ PET_LOOKUP: value }, 'PET_LOOKUP');
    expect(configError({ PET_LOOKUP: value }).message).toMatch(/auto.*list.*legacy/);
  });
});

describe('PETSTORE_MAX_RETRY_AFTER and CURSOR_SECRET', () => {
  it('takes a duration for the clamp on upstream waits', () => {
    expect(parseConfig({ PETSTORE_MAX_RETRY_AFTER: '10m' }).maxRetryAfterMs).toBe(600_000);
  });

  it.each(['0s', '500ms', '2d', 'never'])('refuses a clamp of %j naming PETSTORE_MAX_RETRY_AFTER', (value) => {
    expectRefused({ PETSTORE_MAX_RETRY_AFTER: value }, 'PETSTORE_MAX_RETRY_AFTER');
  });

  it('takes a cursor secret of 16 characters or more, and refuses a shorter one without repeating it', () => {
    expect(parseConfig({ CURSOR_SECRET: 'sixteen-chars-ok' }).cursorSecret).toBe('sixteen-chars-ok');
    expectRefused({ CURSOR_SECRET: 'too-short' }, 'CURSOR_SECRET');
    expect(configError({ CURSOR_SECRET: 'too-short' }).message).not.toContain('too-short');
  });
});

describe('HOST, CORS_ORIGINS, slow clients, METRICS_TOKEN, CLIENT_ID_HEADER, PETSTORE_DEMO', () => {
  it.each(['0.0.0.0', '::', '[::1]', 'localhost', 'gateway.internal'])('takes HOST=%j', (value) => {
    expect(parseConfig({ HOST: value }).host).toBe(value.replace(/^\[(.*)\]$/, '$1'));
  });

  it.each(['a b', 'http://x', 'host/path'])('refuses HOST=%j naming it', (value) => {
    expectRefused({ HOST: value }, 'HOST');
  });

  it('takes * or a list of origins, and refuses a path or a scheme other than http(s)', () => {
    expect(parseConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(parseConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:3000' }).corsOrigins).toEqual([
      'https://a.example',
      'http://localhost:3000',
    ]);
    for (const value of ['https://a.example/app', 'ftp://a.example', 'a.example']) {
      expectRefused({ CORS_ORIGINS: value }, 'CORS_ORIGINS');
    }
  });

  it('takes the slow-client limits, and refuses a head timeout longer than the request timeout', () => {
    expect(
      parseConfig({ HEADERS_TIMEOUT: '1s', REQUEST_TIMEOUT: '2s', KEEP_ALIVE_TIMEOUT: '500ms', MAX_CONNECTIONS: '10' })
        .http,
    ).toEqual({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 500, maxConnections: 10 });
    expectRefused({ HEADERS_TIMEOUT: '40s' }, 'HEADERS_TIMEOUT');
    expectRefused({ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS');
  });

  it('takes a metrics token, a client id header (lower-cased) and PETSTORE_DEMO', () => {
    expect(parseConfig({ METRICS_TOKEN: 'a-metrics-token-of-length' }).metricsToken).toBe('a-metrics-token-of-length');
    expect(parseConfig({ CLIENT_ID_HEADER: 'X-Client-Id' }).clientIdHeader).toBe('x-client-id');
    expectRefused({ CLIENT_ID_HEADER: 'bad header' }, 'CLIENT_ID_HEADER');
    expect(parseConfig({ PETSTORE_DEMO: 'true' }).demo).toBe(true);
  });
});

describe('REDIS_URL', () => {
  it.each(['redis://localhost:6379', 'rediss://user:pass@redis.example.com:6380/2'])('takes %j', (value) => {
    expect(parseConfig({ REDIS_URL: value }).redis).toMatchObject({ mode: 'single', url: value });
  });

  it.each(['localhost:6379', 'http://localhost:6379', 'not a url'])('refuses %j naming REDIS_URL', (value) => {
    expectRefused({ REDIS_URL: value }, 'REDIS_URL');
  });
});

describe('UPSTREAM_CONNECTIONS, UPSTREAM_CONNECTIONS_PER_KEY, MAX_QUEUED_PER_CLIENT, SHUTDOWN_GRACE', () => {
  it('gives one key a quarter of the pool unless told otherwise', () => {
    expect(parseConfig({ UPSTREAM_CONNECTIONS: '10' })).toMatchObject({
      upstreamConnections: 10,
      upstreamConnectionsPerKey: 2,
    });
    expect(parseConfig({ UPSTREAM_CONNECTIONS: '2' }).upstreamConnectionsPerKey).toBe(1);
    expect(parseConfig({ UPSTREAM_CONNECTIONS_PER_KEY: '64' }).upstreamConnectionsPerKey).toBe(64);
  });

  it('waits by default as long as a request may take (PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT) plus 5 s', () => {
    expect(parseConfig({}).drainGraceMs).toBe(25_000);
    expect(parseConfig({ PETSTORE_MAX_WAIT: '2s', PETSTORE_TIMEOUT: '30s' }).drainGraceMs).toBe(37_000);
    expect(parseConfig({ PETSTORE_MAX_WAIT: '1d', PETSTORE_TIMEOUT: '1d' }).drainGraceMs).toBe(86_400_000);
  });

  it('takes a queue bound and a grace period', () => {
    expect(parseConfig({ MAX_QUEUED_PER_CLIENT: '5', SHUTDOWN_GRACE: '30s' })).toMatchObject({
      maxQueuedPerClient: 5,
      drainGraceMs: 30_000,
    });
  });

  it.each([
    [{ UPSTREAM_CONNECTIONS: '0' }, 'UPSTREAM_CONNECTIONS'],
    [{ UPSTREAM_CONNECTIONS_PER_KEY: '65' }, 'UPSTREAM_CONNECTIONS_PER_KEY'],
    [{ UPSTREAM_CONNECTIONS_PER_KEY: 'all' }, 'UPSTREAM_CONNECTIONS_PER_KEY'],
    [{ MAX_QUEUED_PER_CLIENT: '0' }, 'MAX_QUEUED_PER_CLIENT'],
    [{ SHUTDOWN_GRACE: '10' }, 'SHUTDOWN_GRACE'],
  ])('refuses %j naming %s', (env, variable) => {
    expectRefused(env, variable);
  });
});

describe('NODE_ENV and INTROSPECTION', () => {
  it('turns introspection off in production and on elsewhere', () => {
    expect(parseConfig({ NODE_ENV: 'production' })).toMatchObject({
      production: true,
      development: false,
      introspection: false,
    });
    expect(parseConfig({ NODE_ENV: 'development' })).toMatchObject({
      production: false,
      development: true,
      introspection: true,
    });
    expect(parseConfig({ NODE_ENV: 'test' })).toMatchObject({
      production: false,
      development: false,
      introspection: true,
    });
  });

  it.each(['true', '1', 'yes', 'TRUE'])('reads INTROSPECTION=%j as on, in production too', (value) => {
    expect(parseConfig({ NODE_ENV: 'production', INTROSPECTION: value }).introspection).toBe(true);
  });

  it.each(['false', '0', 'no', 'False'])('reads INTROSPECTION=%j as off', (value) => {
    expect(parseConfig({ INTROSPECTION: value }).introspection).toBe(false);
  });

  it.each(['maybe', 'on', '2'])('refuses INTROSPECTION=%j naming it', (value) => {
    expectRefused({ INTROSPECTION: value }, 'INTROSPECTION');
  });
});

describe('LOG_LEVEL', () => {
  it.each(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const)('takes %s', (value) => {
    expect(parseConfig({ LOG_LEVEL: value }).logLevel).toBe(value);
  });

  it.each(['verbose', 'warning', '10'])('refuses %j naming LOG_LEVEL', (value) => {
    expectRefused({ LOG_LEVEL: value }, 'LOG_LEVEL');
  });
});

describe('LANDING_PAGE', () => {
  it("is Apollo Sandbox by default, and Apollo's production page by default under NODE_ENV=production", () => {
    expect(parseConfig({}).landingPage).toBe('sandbox');
    expect(parseConfig({ NODE_ENV: 'development' }).landingPage).toBe('sandbox');
    expect(parseConfig({ NODE_ENV: 'production' }).landingPage).toBe('production');
    expect(parseConfig({ NODE_ENV: 'production', LANDING_PAGE: ' ' }).landingPage).toBe('production');
  });

  it.each(['sandbox', 'graphiql', 'none'] as const)('takes %s, in production too', (value) => {
    expect(parseConfig({ LANDING_PAGE: value }).landingPage).toBe(value);
    expect(parseConfig({ NODE_ENV: 'production', LANDING_PAGE: value }).landingPage).toBe(value);
  });

  it.each(['production', 'GraphiQL', 'playground', 'off'])('refuses %j naming LANDING_PAGE and its values', (value) => {
    expectRefused({ LANDING_PAGE: value }, 'LANDING_PAGE');
    expect(configError({ LANDING_PAGE: value }).message).toBe('LANDING_PAGE must be one of sandbox, graphiql, none');
  });
});

describe('OpenTelemetry (OTEL_*)', () => {
  const ENDPOINT = 'http://127.0.0.1:4318';

  it('traces only when an OTLP endpoint is set, for traces or for all signals', () => {
    expect(parseConfig({}).tracing).toBeUndefined();
    expect(parseConfig({ OTEL_SERVICE_NAME: 'gw' }).tracing).toBeUndefined();
    expect(parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }).tracing).toEqual({
      serviceName: 'petstore-graphql-gateway',
    });
    expect(
      parseConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces`, OTEL_SERVICE_NAME: 'gw' }).tracing,
    ).toEqual({ serviceName: 'gw' });
  });

  it('stays off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none', () => {
    expect(parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(
      parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }).tracing,
    ).toBeUndefined();
    expect(parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp' }).tracing).toBeDefined();
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'localhost:4318'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'grpc://collector:4317'],
    ['OTEL_TRACES_EXPORTER', 'zipkin'],
    ['OTEL_SDK_DISABLED', 'maybe'],
  ])('refuses %s=%s naming the variable', (name, raw) => {
    expectRefused({ [name]: raw }, name);
  });
});
