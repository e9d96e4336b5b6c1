/**
 * The Pet Store as the budget simulation meets it: the reference store's own rate-limit rules
 * (src/petstore/rate-limit.ts: fixed windows aligned to its clock, 429 with Retry-After, a ban after
 * `banThreshold` requests in one 429 period), answering on a virtual clock, with the hostile modes
 * an upstream we do not control may have. It records every request that reaches it, which is what
 * the invariants are checked against.
 */

import type { RateWindow } from '../../src/config.js';
import { RateLimiter } from '../../src/petstore/rate-limit.js';

/** What the upstream says in X-RateLimit-* headers. */
export type HeaderMode =
  | 'honest'
  /** No rate-limit headers at all. */
  | 'absent'
  /** Remaining always 999 of a Limit of 1000, whatever is left. */
  | 'lying'
  /** Reset as a Unix time in milliseconds. */
  | 'reset-ms'
  /** Reset as seconds from now. */
  | 'reset-delta';

/** What a 429's Retry-After says. */
export type RetryAfterMode = 'seconds' | 'date' | 'absent' | 'past' | 'zero' | 'absurd';

export interface UpstreamRules {
  /** The upstream's real limits: its "minute" window and its "day" window. */
  readonly windows: readonly [RateWindow, RateWindow];
  readonly headers: HeaderMode;
  readonly retryAfter: RetryAfterMode;
  /** One-way latency and its jitter (uniform, ± jitter), in ms. */
  readonly latencyMs: number;
  readonly jitterMs: number;
  /** The upstream's clock is ours plus this (its windows, Reset and HTTP-dates are on its clock). */
  readonly skewMs: number;
  /** It accepts requests and never answers. */
  readonly silent: boolean;
  /** Our clock times at which a client of the key we cannot see spends one request (it heeds Retry-After). */
  readonly foreign: readonly number[];
}

export interface Arrival {
  /** Our clock when the request was handed to a connection, and when it reached the upstream. */
  readonly sentAt: number;
  readonly at: number;
  readonly key: string;
  readonly method: 'GET' | 'POST';
  /** The operation that sent it (X-Request-Id), or 'foreign'. */
  readonly op: string;
  readonly status: number;
  readonly code: string | undefined;
  /** A createPet's name. */
  readonly name: string | undefined;
  /** The Retry-After a 429 carried, in ms from its arrival (undefined: none readable). */
  readonly retryAfterMs: number | undefined;
}

export interface SimResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export const BAN_THRESHOLD = 10;

/** A request of ours on the wire: from when it was handed to a connection until its answer or its abort came back. */
export interface Flight {
  readonly key: string;
  readonly from: number;
  to: number | undefined;
}

export class SimUpstream {
  readonly arrivals: Arrival[] = [];
  /** Our requests on the wire (sim-dispatcher.ts records them). */
  readonly flights: Flight[] = [];
  /** Names of the pets created, in order. */
  readonly created: string[] = [];
  readonly #rules: UpstreamRules;
  readonly #limiter: RateLimiter;
  #nextId = 1;
  #foreignPausedUntil = 0;
  #banned = false;

  constructor(rules: UpstreamRules) {
    this.#rules = rules;
    const [minute, day] = rules.windows;
    this.#limiter = new RateLimiter({
      minuteMs: minute.windowMs,
      dayMs: day.windowMs,
      banThreshold: BAN_THRESHOLD,
      banMs: 15 * 60_000,
    });
    // The unseen client spends its requests through the same limits.
    for (const at of rules.foreign) {
      setTimeout(() => this.#foreign(), Math.max(0, at - Date.now()));
    }
  }

  get rules(): UpstreamRules {
    return this.#rules;
  }

  /** Whether any key was banned. */
  get banned(): boolean {
    return this.#banned;
  }

  /** A request reaching the upstream now; undefined when it will never answer. */
  receive(request: {
    method: 'GET' | 'POST';
    key: string;
    op: string;
    body: string | undefined;
    sentAt: number;
  }): SimResponse | undefined {
    const now = Date.now();
    const theirs = now + this.#rules.skewMs;
    const [minute, day] = this.#rules.windows;
    const admission = this.#limiter.admit(request.key, { perMinute: minute.count, perDay: day.count }, theirs);
    const name = request.method === 'POST' ? (JSON.parse(request.body ?? '{}') as { name?: string }).name : undefined;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...this.#quotaHeaders(admission.quota, theirs),
    };
    let response: SimResponse;
    let retryAfterMs: number | undefined;
    if (admission.allowed) {
      if (request.method === 'POST') {
        this.created.push(name as string);
        const id = this.#nextId++;
        response = {
          status: 201,
          headers,
          body: JSON.stringify({ id, name, categoryId: 7, status: 'available' }),
        };
      } else response = { status: 200, headers, body: '[]' };
    } else {
      if (admission.banned) this.#banned = true;
      const retry = this.#retryAfter(admission.retryAt, theirs);
      if (retry.header !== undefined) headers['retry-after'] = retry.header;
      retryAfterMs = retry.ms;
      const code = admission.banned ? 'key_banned' : 'rate_limited';
      response = { status: 429, headers, body: JSON.stringify({ code, message: 'rate limit exceeded', status: 429 }) };
    }
    this.arrivals.push({
      sentAt: request.sentAt,
      at: now,
      key: request.key,
      method: request.method,
      op: request.op,
      status: response.status,
      code:
        response.status === 429
          ? admission.allowed
            ? undefined
            : admission.banned
              ? 'key_banned'
              : 'rate_limited'
          : undefined,
      name,
      retryAfterMs,
    });
    return this.#rules.silent ? undefined : response;
  }

  #foreign(): void {
    const now = Date.now();
    if (now < this.#foreignPausedUntil) return;
    const response = this.receive({ method: 'GET', key: SERVER_KEY, op: 'foreign', body: undefined, sentAt: now });
    const last = this.arrivals.at(-1);
    if (response?.status === 429 || last?.status === 429) {
      this.#foreignPausedUntil = now + Math.max(1_000, last?.retryAfterMs ?? 1_000);
    }
  }

  #quotaHeaders(quota: { limit: number; remaining: number; resetAt: number }, theirs: number): Record<string, string> {
    switch (this.#rules.headers) {
      case 'absent':
        return {};
      case 'lying':
        return {
          'x-ratelimit-limit': '1000',
          'x-ratelimit-remaining': '999',
          'x-ratelimit-reset': seconds(quota.resetAt),
        };
      case 'reset-ms':
        return { ...honest(quota), 'x-ratelimit-reset': String(quota.resetAt) };
      case 'reset-delta':
        return { ...honest(quota), 'x-ratelimit-reset': String(Math.ceil((quota.resetAt - theirs) / 1000)) };
      default:
        return honest(quota);
    }
  }

  #retryAfter(retryAt: number, theirs: number): { header: string | undefined; ms: number | undefined } {
    const ms = Math.max(1_000, Math.ceil((retryAt - theirs) / 1000) * 1000);
    switch (this.#rules.retryAfter) {
      case 'seconds':
        return { header: String(ms / 1000), ms };
      case 'date':
        return {
          header: new Date(Math.ceil(retryAt / 1000) * 1000).toUTCString(),
          ms: Math.ceil(retryAt / 1000) * 1000 - theirs,
        };
      case 'past':
        return { header: new Date(Math.floor(theirs / 1000) * 1000 - 120_000).toUTCString(), ms: undefined };
      case 'zero':
        return { header: '0', ms: undefined };
      case 'absurd':
        return { header: '999999999', ms: undefined };
      default:
        return { header: undefined, ms: undefined };
    }
  }
}

/** The key every simulated client shares unless it brings its own. */
export const SERVER_KEY = 'sim-server-key';

function seconds(ms: number): string {
  return String(Math.ceil(ms / 1000));
}

function honest(quota: { limit: number; remaining: number; resetAt: number }): Record<string, string> {
  return {
    'x-ratelimit-limit': String(quota.limit),
    'x-ratelimit-remaining': String(quota.remaining),
    'x-ratelimit-reset': seconds(quota.resetAt),
  };
}
