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

describe('dashboard config', () => {
  it('defaults to the make dev services, a 12 h session and secure cookies outside development', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PORT: 8083,
      HOST: '0.0.0.0',
      DATABASE_URL: defaults.databaseUrl,
      KEYS_URL: 'http://127.0.0.1:8081',
      BILLING_URL: 'http://127.0.0.1:8082',
      SESSION_TTL_MINUTES: 720,
      SIGNIN_MAX_FAILURES: 5,
      SIGNIN_WINDOW_MINUTES: 15,
      SIGNIN_BACKOFF_SECONDS: 1,
      TRUSTED_PROXIES: '',
      PUBLIC_URL: 'http://127.0.0.1:8083',
      NODE_ENV: 'development',
      COOKIE_SECURE: false,
    });
    expect(c.UI_DIR).toMatch(/services\/dashboard\/ui\/dist$/);
    expect(loadConfig({ NODE_ENV: 'test' }).COOKIE_SECURE).toBe(true);
    expect(loadConfig({ NODE_ENV: 'development', COOKIE_SECURE: 'true' }).COOKIE_SECURE).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test', COOKIE_SECURE: '0' }).COOKIE_SECURE).toBe(false);
  });

  it('validates TRUSTED_PROXIES (hop count, addresses, CIDRs, names) at start', () => {
    expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, loopback' }).TRUSTED_PROXIES).toBe(
      '10.0.0.0/8, loopback',
    );
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/40' })).toThrow(/TRUSTED_PROXIES.*prefix length/s);
    expect(() => loadConfig({ TRUSTED_PROXIES: 'lb.example.com' })).toThrow(/TRUSTED_PROXIES/);
  });

  it('coerces numbers and keeps an explicit PUBLIC_URL', () => {
    const c = loadConfig({ PORT: '0', SESSION_TTL_MINUTES: '5', PUBLIC_URL: 'https://dash.example.com' });
    expect(c).toMatchObject({ PORT: 0, SESSION_TTL_MINUTES: 5, PUBLIC_URL: 'https://dash.example.com' });
  });

  it('lists every problem, and refuses the development secret in production', () => {
    expect(() => loadConfig({ PORT: 'x', COOKIE_SECURE: 'maybe', KEYS_URL: 'nope' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'x', COOKIE_SECURE: 'maybe', KEYS_URL: 'nope' });
    } catch (err) {
      expect((err as Error).message).toMatch(/PORT/);
      expect((err as Error).message).toMatch(/COOKIE_SECURE/);
      expect((err as Error).message).toMatch(/KEYS_URL/);
    }
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PRIVATE_KEY/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SERVICE_PUBLIC_KEYS/);
    const own = {
      SERVICE_PRIVATE_KEY: generateServiceKeyPair().privateKey,
      SERVICE_PUBLIC_KEYS: `admin=${generateServiceKeyPair().publicKey}`,
    };
    expect(() => loadConfig({ NODE_ENV: 'production', ...own, ...servers })).not.toThrow();
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        ...own,
        SERVICE_PUBLIC_KEYS: `admin=${DEV_SERVICE_KEYS.admin.publicKey}`,
      }),
    ).toThrow(/development key/);
  });
});
