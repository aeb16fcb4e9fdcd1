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

describe('keys config', () => {
  it('defaults to the local services', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PORT: 8081,
      HOST: '127.0.0.1',
      DATABASE_URL: defaults.databaseUrl,
      REDIS_URL: defaults.redisUrl,
      REDIS_PREFIX: 'tg:',
      LAST_USED_FLUSH_MS: 5000,
      LOG_LEVEL: 'info',
      LOG_PRETTY: false,
    });
    expect(c.BILLING_URL).toBeUndefined();
  });

  it('coerces numbers and booleans and trims the billing url', () => {
    const c = loadConfig({
      PORT: '0',
      LAST_USED_FLUSH_MS: '250',
      LOG_PRETTY: 'false',
      BILLING_URL: 'http://billing:8082/',
    });
    expect(c.PORT).toBe(0);
    expect(c.LAST_USED_FLUSH_MS).toBe(250);
    expect(c.LOG_PRETTY).toBe(false);
    expect(c.BILLING_URL).toBe('http://billing:8082');
  });

  it('treats an empty BILLING_URL as unset', () => {
    expect(loadConfig({ BILLING_URL: '' }).BILLING_URL).toBeUndefined();
  });

  it('rejects invalid values naming each variable', () => {
    expect(() => loadConfig({ PORT: 'abc', LAST_USED_FLUSH_MS: '-1', BILLING_URL: 'not a url' })).toThrow(
      ConfigError,
    );
    try {
      loadConfig({ PORT: 'abc', LAST_USED_FLUSH_MS: '-1', BILLING_URL: 'not a url' });
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toContain('PORT');
      expect(message).toContain('LAST_USED_FLUSH_MS');
      expect(message).toContain('BILLING_URL');
    }
  });

  it('refuses the development service keys in production and accepts its own', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PRIVATE_KEY/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PUBLIC_KEYS/);
    const own = {
      SERVICE_PRIVATE_KEY: generateServiceKeyPair().privateKey,
      SERVICE_PUBLIC_KEYS: `proxy=${generateServiceKeyPair().publicKey},dashboard=${generateServiceKeyPair().publicKey}`,
    };
    expect(loadConfig({ NODE_ENV: 'production', ...own, ...servers }).NODE_ENV).toBe('production');
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        ...own,
        ...servers,
        SERVICE_PRIVATE_KEY: DEV_SERVICE_KEYS.keys.privateKey,
      }),
    ).toThrow(/development key/);
  });
});
