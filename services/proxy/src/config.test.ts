import { existsSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_SERVICE_KEYS, generateServiceKeyPair } from '@tollgate/auth';
import { describe, expect, it } from 'vitest';
import { configEnv, DEFAULT_CATALOG_PATH, loadConfig, spoolDir, stateDir } from './config';

/** Server URLs with the service's own passwords, as production needs. */
const servers = {
  DATABASE_URL: 'postgres://tollgate_x:pw-9fQ2zL7rT4vN1x@db.internal:5432/tollgate',
  REDIS_URL: 'redis://tollgate-x:pw-3kW8sD5mB2cH7y@redis.internal:6379',
  AMQP_URL: 'amqp://tollgate-x:pw-6jP1gV9nR3tM5w@mq.internal:5672',
};

describe('proxy config', () => {
  it('USAGE_PARTITIONS: 1 by default (the queue names of an unpartitioned install), 1..64', () => {
    expect(loadConfig({}).USAGE_PARTITIONS).toBe(1);
    expect(loadConfig({ USAGE_PARTITIONS: '2' }).USAGE_PARTITIONS).toBe(2);
    for (const bad of ['0', '65', 'two'])
      expect(() => loadConfig({ USAGE_PARTITIONS: bad })).toThrow(/USAGE_PARTITIONS/);
  });

  it('works with no env at all, against local services', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.HOST).toBe('0.0.0.0');
    expect(c.AMQP_PREFIX).toBe('tollgate');
    expect(c.REDIS_PREFIX).toBe('tg:');
    expect(c.KEYS_URL).toBe('http://127.0.0.1:8081');
    expect(c.BILLING_URL).toBe('http://127.0.0.1:8082');
    expect(c.WORKERS).toBe(1);
    expect(c.LOG_PRETTY).toBe(false);
  });

  it('keeps the spool under the state directory, never in the shared temporary directory', () => {
    expect(stateDir({}, { XDG_STATE_HOME: '/home/u/.state' })).toBe('/home/u/.state/tollgate/proxy');
    expect(stateDir({}, {})).toBe(join(homedir(), '.local', 'state', 'tollgate', 'proxy'));
    expect(spoolDir({ STATE_DIR: '/var/lib/tollgate' })).toBe('/var/lib/tollgate/spool');
    expect(spoolDir({ STATE_DIR: '/var/lib/tollgate', SPOOL_DIR: '/mnt/spool' })).toBe('/mnt/spool');
    expect(spoolDir(loadConfig({}))).not.toContain(tmpdir());
  });

  it('defaults the catalog to the repo dev catalog, whatever the cwd', () => {
    expect(loadConfig({}).CATALOG_PATH).toBe(DEFAULT_CATALOG_PATH);
    expect(DEFAULT_CATALOG_PATH).toMatch(/infra\/catalog\/dev\.yaml$/);
    expect(existsSync(new URL('../../../infra', import.meta.url))).toBe(true);
  });

  it('coerces numbers and parses booleans for real', () => {
    const c = loadConfig({ PORT: '9000', KEEPALIVE_INTERVAL_MS: '250', WORKERS: '4', LOG_PRETTY: 'false' });
    expect(c.PORT).toBe(9000);
    expect(c.KEEPALIVE_INTERVAL_MS).toBe(250);
    expect(c.WORKERS).toBe(4);
    expect(c.LOG_PRETTY).toBe(false);
  });

  it('names every invalid variable', () => {
    expect(() => loadConfig({ PORT: 'x', KEYS_URL: 'not a url', UPSTREAM_TIMEOUT_MS: '-1' })).toThrow(
      /PORT[\s\S]*KEYS_URL[\s\S]*UPSTREAM_TIMEOUT_MS|PORT[\s\S]*UPSTREAM_TIMEOUT_MS[\s\S]*KEYS_URL/,
    );
    expect(() => loadConfig({ SERVICE_PRIVATE_KEY: 'short' })).toThrow(/SERVICE_PRIVATE_KEY/);
    expect(() => loadConfig({ WORKERS: '0' })).toThrow(/WORKERS/);
    expect(() => loadConfig({ BODY_LIMIT: 'lots' })).toThrow(/BODY_LIMIT/);
    expect(() => loadConfig({ SPEND_GUARD: 'maybe' })).toThrow(/SPEND_GUARD/);
  });

  it('refuses the public development key in production and accepts its own', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PRIVATE_KEY/);
    expect(() =>
      loadConfig({ NODE_ENV: 'production', SERVICE_PRIVATE_KEY: DEV_SERVICE_KEYS.proxy.privateKey }),
    ).toThrow(/development key/);
    expect(
      loadConfig({
        NODE_ENV: 'production',
        ...servers,
        SERVICE_PRIVATE_KEY: generateServiceKeyPair().privateKey,
      }).NODE_ENV,
    ).toBe('production');
    // Nothing calls the proxy with a service token: it trusts no service key.
    expect('SERVICE_PUBLIC_KEYS' in loadConfig({})).toBe(false);
  });

  it('opt-in bodies: default redaction patterns, a JSON array of its own, or none; an invalid one is named', () => {
    const defaults = loadConfig({});
    expect(defaults.BODIES_MAX_BYTES).toBe(32_768);
    expect(defaults.BODIES_REDACT.length).toBeGreaterThan(0);
    expect('mail me@example.com'.replace(defaults.BODIES_REDACT.at(-1) as RegExp, 'X')).toBe('mail X');
    const own = loadConfig({ BODIES_REDACT: String.raw`["\\d{3}-\\d{4}"]`, BODIES_MAX_BYTES: '1024' });
    expect(own.BODIES_REDACT.map((r) => r.source)).toEqual([String.raw`\d{3}-\d{4}`]);
    expect(loadConfig({ BODIES_REDACT: '[]' }).BODIES_REDACT).toEqual([]);
    expect(() => loadConfig({ BODIES_REDACT: '["(unclosed"]' })).toThrow(/BODIES_REDACT[\s\S]*unclosed/);
    expect(() => loadConfig({ BODIES_REDACT: '"sk-"' })).toThrow(/BODIES_REDACT[\s\S]*JSON array/);
    expect(() => loadConfig({ BODIES_MAX_BYTES: '10' })).toThrow(/BODIES_MAX_BYTES/);
  });
});

describe('configEnv', () => {
  it('gives the environment that loads back into the same config (redaction patterns included)', () => {
    const config = loadConfig({
      BODIES_REDACT: JSON.stringify(['secret-[0-9]+', 'sk-[a-z]{4}']),
      TRUSTED_PROXIES: '10.0.0.0/8,127.0.0.1',
      USAGE_PARTITIONS: '3',
    });
    const again = loadConfig(configEnv(config));
    expect(again.BODIES_REDACT.map((r) => r.source)).toEqual(['secret-[0-9]+', 'sk-[a-z]{4}']);
    expect({ ...again, BODIES_REDACT: null }).toEqual({ ...config, BODIES_REDACT: null });
  });
});
