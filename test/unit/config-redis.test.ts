/**
 * The Redis settings: one server, a Cluster or Sentinel, with credentials and TLS in each mode, and
 * at most one of them (two stop start-up with one line naming both). Pure parsing: nothing to fake.
 */

import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';

const fails = (env: Record<string, string>) => () => parseConfig(env);

describe('Redis configuration', () => {
  it('has no Redis by default', () => {
    expect(parseConfig({}).redis).toBeUndefined();
  });

  it('reads one server from REDIS_URL, TLS from its scheme, credentials from the variables', () => {
    expect(parseConfig({ REDIS_URL: 'rediss://r.example:6380', REDIS_PASSWORD: 'pw' }).redis).toEqual({
      mode: 'single',
      url: 'rediss://r.example:6380',
      auth: { password: 'pw' },
      tls: true,
    });
    expect(parseConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redis).toMatchObject({ mode: 'single', tls: false });
  });

  it('reads a Cluster from REDIS_CLUSTER_NODES, with REDIS_TLS and an ACL user', () => {
    const env = {
      REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7001,[::1]:7002',
      REDIS_USERNAME: 'gateway',
      REDIS_PASSWORD: 'secret',
      REDIS_TLS: 'true',
    };
    expect(parseConfig(env).redis).toEqual({
      mode: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      auth: { username: 'gateway', password: 'secret' },
      tls: true,
    });
  });

  it('reads Sentinel from REDIS_SENTINELS and REDIS_SENTINEL_MASTER', () => {
    expect(parseConfig({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_MASTER: 'gw' }).redis).toEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      master: 'gw',
      auth: {},
      tls: false,
    });
  });

  it.each([
    [{ REDIS_URL: 'redis://a:1', REDIS_CLUSTER_NODES: 'b:2' }, 'REDIS_URL and REDIS_CLUSTER_NODES are both set'],
    [{ REDIS_URL: 'redis://a:1', REDIS_SENTINELS: 'b:2', REDIS_SENTINEL_MASTER: 'm' }, 'REDIS_URL and REDIS_SENTINELS'],
    [{ REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINELS: 'b:2' }, 'REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set'],
  ])('refuses two Redis settings at once, naming both (%o)', (env, message) => {
    expect(fails(env)).toThrow(ConfigError);
    expect(fails(env)).toThrow(message);
    try {
      parseConfig(env);
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });

  it.each([
    [{ REDIS_CLUSTER_NODES: 'a' }, 'REDIS_CLUSTER_NODES must be a comma list of host:port'],
    [{ REDIS_CLUSTER_NODES: 'a:1,b:99999' }, 'REDIS_CLUSTER_NODES must be a comma list of host:port'],
    [{ REDIS_SENTINELS: 'a:1' }, 'REDIS_SENTINEL_MASTER must be set with REDIS_SENTINELS'],
    [{ REDIS_SENTINEL_MASTER: 'm' }, 'REDIS_SENTINEL_MASTER is set without REDIS_SENTINELS'],
    [{ REDIS_PASSWORD: 'pw' }, 'REDIS_PASSWORD is set without a Redis'],
    [{ REDIS_CLUSTER_NODES: 'a:1', REDIS_TLS: 'maybe' }, 'REDIS_TLS must be true or false'],
    [{ REDIS_URL: 'redis://a:1', REDIS_TLS: 'true' }, 'REDIS_TLS contradicts REDIS_URL'],
  ])('refuses %o with one line naming the variable', (env, message) => {
    expect(fails(env)).toThrow(message);
  });
});
