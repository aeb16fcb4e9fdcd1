import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  commonEnv,
  loadConfig,
  MIN_PRODUCTION_SECRET_LENGTH,
  refuseDevSecretInProduction,
  SHIPPED_DEFAULT_SECRETS,
  serviceJwtEnv,
} from './index';

const schema = z
  .object({ ...commonEnv, ...serviceJwtEnv, OTHER_SECRET: z.string().optional() })
  .superRefine(refuseDevSecretInProduction);
const strong = 'f3a9c1d27b4e8f60a5d3c2b1e0f9a8d7c6b5a4f3e2d1c0b9';

describe('production secret check (issue 14)', () => {
  it('rejects every shipped default secret in production', () => {
    for (const secret of SHIPPED_DEFAULT_SECRETS) {
      expect(() => loadConfig(schema, { NODE_ENV: 'production', SERVICE_JWT_SECRET: secret })).toThrow(
        ConfigError,
      );
    }
    // The default itself (SERVICE_JWT_SECRET unset).
    expect(() => loadConfig(schema, { NODE_ENV: 'production' })).toThrow(/SERVICE_JWT_SECRET/);
    // Anything that says "change me", whatever its length.
    expect(() =>
      loadConfig(schema, {
        NODE_ENV: 'production',
        SERVICE_JWT_SECRET: `my-own-secret-please-change-me-${strong}`,
      }),
    ).toThrow(/public default/);
  });

  it('rejects short secrets in production, every *_SECRET setting included', () => {
    const short = 'x'.repeat(MIN_PRODUCTION_SECRET_LENGTH - 1);
    expect(() => loadConfig(schema, { NODE_ENV: 'production', SERVICE_JWT_SECRET: short })).toThrow(
      /at least 32 characters/,
    );
    expect(() =>
      loadConfig(schema, { NODE_ENV: 'production', SERVICE_JWT_SECRET: strong, OTHER_SECRET: 'short' }),
    ).toThrow(/OTHER_SECRET/);
  });

  it('accepts a strong secret in production and the defaults in development', () => {
    expect(
      loadConfig(schema, { NODE_ENV: 'production', SERVICE_JWT_SECRET: strong }).SERVICE_JWT_SECRET,
    ).toBe(strong);
    expect(loadConfig(schema, {}).NODE_ENV).toBe('development');
  });
});
