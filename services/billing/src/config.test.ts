import { DEV_SERVICE_KEYS, generateServiceKeyPair } from '@tollgate/auth';
import { ConfigError, defaults } from '@tollgate/config';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';

/** Server URLs with the service's own passwords, as production needs. */
const servers = {
  DATABASE_URL: 'postgres://tollgate_x:pw-9fQ2zL7rT4vN1x@db.internal:5432/tollgate',
  REDIS_URL: 'redis://tollgate-x:pw-3kW8sD5mB2cH7y@redis.internal:6379',
  AMQP_URL: 'amqp://tollgate-x:pw-6jP1gV9nR3tM5w@mq.internal:5672',
};

describe('billing config', () => {
  it('defaults to the local services', () => {
    expect(loadConfig({})).toMatchObject({
      PORT: 8082,
      HOST: '127.0.0.1',
      DATABASE_URL: defaults.databaseUrl,
      REDIS_URL: defaults.redisUrl,
      REDIS_PREFIX: 'tg:',
      AMQP_URL: defaults.amqpUrl,
      AMQP_PREFIX: 'tollgate',
      BATCH_SIZE: 1000,
      BATCH_TIMEOUT_MS: 50,
      PREFETCH: 2000,
      WORKER_ENABLED: true,
    });
  });

  it('coerces numbers and booleans', () => {
    const c = loadConfig({
      PORT: '0',
      BATCH_SIZE: '50',
      BATCH_TIMEOUT_MS: '20',
      PREFETCH: '100',
      WORKER_ENABLED: 'false',
    });
    expect(c).toMatchObject({
      PORT: 0,
      BATCH_SIZE: 50,
      BATCH_TIMEOUT_MS: 20,
      PREFETCH: 100,
      WORKER_ENABLED: false,
    });
  });

  it('rejects invalid values naming each variable', () => {
    let message = '';
    try {
      loadConfig({ PORT: 'x', BATCH_SIZE: '0', BATCH_TIMEOUT_MS: '5000', AMQP_URL: 'nope' });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    for (const name of ['PORT', 'BATCH_SIZE', 'BATCH_TIMEOUT_MS', 'AMQP_URL'])
      expect(message).toContain(name);
  });

  it('USAGE_PARTITIONS defaults to 1 (the single queue) and the worker takes every partition unless told', () => {
    expect(loadConfig({})).toMatchObject({ USAGE_PARTITIONS: 1, USAGE_WORKER_PARTITIONS: 'all' });
    expect(loadConfig({ USAGE_PARTITIONS: '4', USAGE_WORKER_PARTITIONS: '0,2-3' })).toMatchObject({
      USAGE_PARTITIONS: 4,
      USAGE_WORKER_PARTITIONS: '0,2-3',
    });
    expect(() => loadConfig({ USAGE_PARTITIONS: '0' })).toThrow(/USAGE_PARTITIONS/);
    expect(() => loadConfig({ USAGE_PARTITIONS: '65' })).toThrow(/USAGE_PARTITIONS/);
    expect(() => loadConfig({ USAGE_PARTITIONS: '2', USAGE_WORKER_PARTITIONS: '2' })).toThrow(
      /USAGE_WORKER_PARTITIONS.*partition 2 does not exist/s,
    );
  });

  it('wants PREFETCH at least BATCH_SIZE', () => {
    expect(() => loadConfig({ BATCH_SIZE: '300', PREFETCH: '100' })).toThrow(/PREFETCH/);
  });

  it('refuses the development trust list and key in production and accepts its own', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PUBLIC_KEYS/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PRIVATE_KEY/);
    const own = ['proxy', 'keys', 'dashboard', 'admin'].map(
      (n) => `${n}=${generateServiceKeyPair().publicKey}`,
    );
    // Billing asks the keys service who owns a key: it has an identity of its own.
    const SERVICE_PRIVATE_KEY = generateServiceKeyPair().privateKey;
    expect(
      loadConfig({
        NODE_ENV: 'production',
        ...servers,
        SERVICE_PUBLIC_KEYS: own.join(','),
        SERVICE_PRIVATE_KEY,
      }).NODE_ENV,
    ).toBe('production');
    const withDev = [...own.slice(1), `proxy=${DEV_SERVICE_KEYS.proxy.publicKey}`].join(',');
    expect(() =>
      loadConfig({ NODE_ENV: 'production', SERVICE_PUBLIC_KEYS: withDev, SERVICE_PRIVATE_KEY }),
    ).toThrow(/development key/);
  });

  it('runs every usage check by default, and refuses to run without one in production', () => {
    expect([...loadConfig({}).USAGE_CHECKS].sort()).toEqual(['cost', 'key', 'signature', 'time']);
    expect([...loadConfig({ USAGE_CHECKS: 'signature' }).USAGE_CHECKS]).toEqual(['signature']);
    expect(() => loadConfig({ USAGE_CHECKS: 'signature,vibes' })).toThrow(/unknown check vibes/);
    const own = {
      NODE_ENV: 'production',
      ...servers,
      SERVICE_PRIVATE_KEY: generateServiceKeyPair().privateKey,
      SERVICE_PUBLIC_KEYS: `proxy=${generateServiceKeyPair().publicKey}`,
    };
    expect(loadConfig(own).USAGE_CHECKS.size).toBe(4);
    expect(() => loadConfig({ ...own, USAGE_CHECKS: 'signature,cost,time' })).toThrow(
      /every check is required in production \(missing: key\)/,
    );
  });
});
