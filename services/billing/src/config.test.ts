import { DEV_SERVICE_KEYS, generateServiceKeyPair } from '@tollgate/auth';
import { ConfigError, defaults } from '@tollgate/config';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';

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

  it('wants PREFETCH at least BATCH_SIZE', () => {
    expect(() => loadConfig({ BATCH_SIZE: '300', PREFETCH: '100' })).toThrow(/PREFETCH/);
  });

  it('refuses the development trust list in production and accepts its own', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PUBLIC_KEYS/);
    const own = ['proxy', 'keys', 'dashboard', 'admin'].map(
      (n) => `${n}=${generateServiceKeyPair().publicKey}`,
    );
    expect(loadConfig({ NODE_ENV: 'production', SERVICE_PUBLIC_KEYS: own.join(',') }).NODE_ENV).toBe(
      'production',
    );
    const withDev = [...own.slice(1), `proxy=${DEV_SERVICE_KEYS.proxy.publicKey}`].join(',');
    expect(() => loadConfig({ NODE_ENV: 'production', SERVICE_PUBLIC_KEYS: withDev })).toThrow(
      /development key/,
    );
    // Billing calls no one: it holds no private key at all.
    expect('SERVICE_PRIVATE_KEY' in loadConfig({})).toBe(false);
  });
});
