import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_SERVICE_KEYS, DEV_SERVICE_PUBLIC_KEYS, SERVICE_NAMES } from '@tollgate/auth';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  adminPrivateKeyEnv,
  ConfigError,
  commonEnv,
  loadConfig,
  MIN_PRODUCTION_SECRET_LENGTH,
  refuseDevSecretInProduction,
  SHIPPED_DEFAULT_SECRETS,
  servicePrivateKeyEnv,
  servicePublicKeysEnv,
} from './index';

const schema = z
  .object({
    ...commonEnv,
    ...servicePrivateKeyEnv('billing'),
    ...servicePublicKeysEnv,
    OTHER_SECRET: z.string().optional(),
  })
  .superRefine(refuseDevSecretInProduction);
const strong = 'f3a9c1d27b4e8f60a5d3c2b1e0f9a8d7c6b5a4f3e2d1c0b9';

/** A fresh keypair as an operator makes one (`openssl genpkey -algorithm ed25519`). */
function keypair(format: 'der' | 'pem' = 'der') {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return format === 'pem'
    ? {
        privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      }
    : {
        privateKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
        publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      };
}
const own = keypair();
const ownPublic = SERVICE_NAMES.map((n) => `${n}=${keypair().publicKey}`).join(',');
const production = {
  NODE_ENV: 'production',
  SERVICE_PRIVATE_KEY: own.privateKey,
  SERVICE_PUBLIC_KEYS: ownPublic,
};

describe('production key check (issue 14)', () => {
  it('refuses the development keys in production, set or defaulted, in any encoding', () => {
    // Defaults (nothing set): both settings hold development keys.
    expect(() => loadConfig(schema, { NODE_ENV: 'production' })).toThrow(/SERVICE_PRIVATE_KEY/);
    expect(() => loadConfig(schema, { NODE_ENV: 'production' })).toThrow(/SERVICE_PUBLIC_KEYS/);
    for (const name of SERVICE_NAMES) {
      const dev = DEV_SERVICE_KEYS[name];
      expect(() => loadConfig(schema, { ...production, SERVICE_PRIVATE_KEY: dev.privateKey })).toThrow(
        /SERVICE_PRIVATE_KEY: holds a development key/,
      );
      // One development key among the operator's own is enough to refuse.
      expect(() =>
        loadConfig(schema, {
          ...production,
          SERVICE_PUBLIC_KEYS: `${ownPublic.replace(/^proxy=[^,]+,/, '')},proxy=${dev.publicKey}`,
        }),
      ).toThrow(/SERVICE_PUBLIC_KEYS: holds a development key/);
    }
    // The same development key as PEM.
    const pem = `-----BEGIN PRIVATE KEY-----\n${DEV_SERVICE_KEYS.proxy.privateKey}\n-----END PRIVATE KEY-----\n`;
    expect(() => loadConfig(schema, { ...production, SERVICE_PRIVATE_KEY: pem })).toThrow(/development key/);
    const adminSchema = z
      .object({ ...commonEnv, ...adminPrivateKeyEnv })
      .superRefine(refuseDevSecretInProduction);
    expect(() => loadConfig(adminSchema, { NODE_ENV: 'production' })).toThrow(/ADMIN_PRIVATE_KEY/);
    expect(
      loadConfig(adminSchema, { NODE_ENV: 'production', ADMIN_PRIVATE_KEY: own.privateKey })
        .ADMIN_PRIVATE_KEY,
    ).toBe(own.privateKey);
  });

  it('refuses malformed keys and trust lists in every environment', () => {
    for (const NODE_ENV of ['development', 'production']) {
      const bad = [
        { SERVICE_PRIVATE_KEY: 'not-a-key' },
        { SERVICE_PRIVATE_KEY: own.publicKey }, // a public key where the private one goes
        {
          SERVICE_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' })
            .privateKey.export({ type: 'pkcs8', format: 'der' })
            .toString('base64'),
        },
        { SERVICE_PUBLIC_KEYS: `proxy=${own.privateKey}` },
        { SERVICE_PUBLIC_KEYS: `mallory=${keypair().publicKey}` },
        { SERVICE_PUBLIC_KEYS: `proxy=${keypair().publicKey},proxy=${keypair().publicKey}` },
        { SERVICE_PUBLIC_KEYS: ' , ' },
      ];
      for (const env of bad) {
        expect(() => loadConfig(schema, { ...production, NODE_ENV, ...env }), JSON.stringify(env)).toThrow(
          ConfigError,
        );
      }
    }
  });

  it("accepts the operator's own keys in production (base64 DER or PEM, commas or newlines)", () => {
    expect(loadConfig(schema, production).SERVICE_PRIVATE_KEY).toBe(own.privateKey);
    const pems = { proxy: keypair('pem'), admin: keypair('pem') };
    const c = loadConfig(schema, {
      ...production,
      SERVICE_PRIVATE_KEY: pems.proxy.privateKey,
      SERVICE_PUBLIC_KEYS: `proxy=${pems.proxy.publicKey},admin=${pems.admin.publicKey}`,
    });
    expect(c.SERVICE_PRIVATE_KEY).toBe(pems.proxy.privateKey);
    expect(
      loadConfig(schema, { ...production, SERVICE_PUBLIC_KEYS: ownPublic.replaceAll(',', '\n') }).NODE_ENV,
    ).toBe('production');
  });

  it('uses the development keys with nothing set outside production', () => {
    const c = loadConfig(schema, {});
    expect(c.SERVICE_PRIVATE_KEY).toBe(DEV_SERVICE_KEYS.billing.privateKey);
    expect(c.SERVICE_PUBLIC_KEYS).toBe(DEV_SERVICE_PUBLIC_KEYS);
  });
});

describe('production secret check (issue 14)', () => {
  it('rejects every shipped default secret, "change me" and short secrets in production', () => {
    for (const secret of SHIPPED_DEFAULT_SECRETS) {
      expect(() => loadConfig(schema, { ...production, OTHER_SECRET: secret })).toThrow(ConfigError);
    }
    expect(() =>
      loadConfig(schema, { ...production, OTHER_SECRET: `my-own-secret-please-change-me-${strong}` }),
    ).toThrow(/public default/);
    const short = 'x'.repeat(MIN_PRODUCTION_SECRET_LENGTH - 1);
    expect(() => loadConfig(schema, { ...production, OTHER_SECRET: short })).toThrow(
      /at least 32 characters/,
    );
    expect(loadConfig(schema, { ...production, OTHER_SECRET: strong }).OTHER_SECRET).toBe(strong);
  });
});

describe('production server URL check (issue 23)', () => {
  const withUrls = z
    .object({
      ...commonEnv,
      DATABASE_URL: z.string().url().optional(),
      AMQP_URL: z.string().url().optional(),
      REDIS_URL: z.string().url().optional(),
    })
    .superRefine(refuseDevSecretInProduction);
  const urls = {
    DATABASE_URL: 'postgres://tollgate_billing:@db:5432/tollgate',
    AMQP_URL: 'amqp://tollgate-billing:@mq:5672',
    REDIS_URL: 'redis://tollgate-billing:@redis:6379',
  } as const;

  it.each(Object.keys(urls) as Array<keyof typeof urls>)(
    'refuses %s with an empty or default password in production, accepts the service’s own',
    (name) => {
      const at = (password: string) => urls[name].replace(':@', `:${encodeURIComponent(password)}@`);
      for (const password of ['', 'tollgate', 'guest', 'Postgres', 'please-change-me'])
        expect(
          () => loadConfig(withUrls, { NODE_ENV: 'production', [name]: at(password) }),
          password,
        ).toThrow(new RegExp(`${name}: (has no password|holds a default password)`));
      expect(() => loadConfig(withUrls, { NODE_ENV: 'production', [name]: 'redis://redis:6379' })).toThrow(
        /has no password/,
      );
      const own = at('Xk9#q2v/8Lw0pZr4');
      expect(loadConfig(withUrls, { NODE_ENV: 'production', [name]: own })[name]).toBe(own);
      // Development and tests keep their local defaults.
      expect(loadConfig(withUrls, { NODE_ENV: 'development', [name]: at('guest') })[name]).toBe(at('guest'));
    },
  );
});

describe('<NAME>_FILE settings (compose mounts the keys from volumes)', () => {
  it('reads SERVICE_PRIVATE_KEY and SERVICE_PUBLIC_KEYS from files, refuses both forms at once or an unreadable file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    try {
      writeFileSync(join(dir, 'private.key'), `${own.privateKey}\n`);
      writeFileSync(join(dir, 'billing.keys'), `${ownPublic}\n`);
      const fromFiles = {
        NODE_ENV: 'production',
        SERVICE_PRIVATE_KEY_FILE: join(dir, 'private.key'),
        SERVICE_PUBLIC_KEYS_FILE: join(dir, 'billing.keys'),
      };
      const c = loadConfig(schema, fromFiles);
      expect(c.SERVICE_PRIVATE_KEY).toBe(own.privateKey);
      expect(c.SERVICE_PUBLIC_KEYS).toBe(ownPublic);
      expect(() => loadConfig(schema, { ...fromFiles, SERVICE_PRIVATE_KEY: own.privateKey })).toThrow(
        /not both/,
      );
      expect(() =>
        loadConfig(schema, { ...fromFiles, SERVICE_PUBLIC_KEYS_FILE: join(dir, 'missing') }),
      ).toThrow(/SERVICE_PUBLIC_KEYS_FILE: cannot read .*ENOENT/);
      // A development key in a file is refused like one in the variable.
      writeFileSync(join(dir, 'dev.key'), DEV_SERVICE_KEYS.proxy.privateKey);
      expect(() =>
        loadConfig(schema, { ...fromFiles, SERVICE_PRIVATE_KEY_FILE: join(dir, 'dev.key') }),
      ).toThrow(/development key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
