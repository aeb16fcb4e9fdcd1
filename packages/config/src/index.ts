import { readFileSync } from 'node:fs';
import {
  DEV_SERVICE_KEYS,
  DEV_SERVICE_PUBLIC_KEYS,
  isDevServiceKey,
  parsePrivateKey,
  parsePublicKeys,
  type ServiceName,
} from '@tollgate/auth';
import { z } from 'zod';

/**
 * Env helpers: every service has one zod schema, parsed by loadConfig(schema, env) at start,
 * never at import time. Defaults point at the local Postgres/Redis/RabbitMQ.
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off', '']);

/** A real boolean parser: "false" is false (z.coerce.boolean would say true). */
export const envBoolean = (defaultValue: boolean) =>
  z
    .union([z.boolean(), z.string()])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return defaultValue;
      if (typeof v === 'boolean') return v;
      const s = v.trim().toLowerCase();
      if (TRUE.has(s)) return true;
      if (FALSE.has(s)) return false;
      ctx.addIssue({ code: 'custom', message: `expected a boolean (true/false), got "${v}"` });
      return z.NEVER;
    });

export const envPort = (defaultValue: number) =>
  z.coerce.number().int().min(0).max(65535).default(defaultValue);

export const defaults = {
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/tollgate',
  redisUrl: 'redis://127.0.0.1:6379',
  amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
} as const;

/** The env entries every service shares. Spread into a service's z.object({...}). */
export const commonEnv = {
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_PRETTY: envBoolean(false),
};

export const redisEnv = {
  /** `redis://` (one node) or `redis+cluster://` (a Redis Cluster, this node a seed): @tollgate/redis. */
  REDIS_URL: z.string().url().default(defaults.redisUrl),
  /** More cluster seeds, `host:port,host:port` (setting it makes REDIS_URL's login a cluster's). */
  REDIS_CLUSTER_NODES: z.string().default(''),
  /**
   * Every Redis key Tollgate writes starts with this; isolates stacks and test runs sharing a server.
   * No braces: the first `{…}` of every key name is its account's Redis Cluster hash tag.
   */
  REDIS_PREFIX: z
    .string()
    .regex(/^[^{}]*$/, 'must not contain "{" or "}" (the hash tag of every key is its account id)')
    .default('tg:'),
};

const privateKeyText = (defaultValue: string) =>
  z
    .string()
    .default(defaultValue)
    .superRefine((v, ctx) => {
      try {
        parsePrivateKey(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    });

/**
 * A calling service's identity: `SERVICE_PRIVATE_KEY`, its own Ed25519 private key (PEM or base64
 * PKCS#8 DER). Default: the development key of `service` (refused in production).
 */
export const servicePrivateKeyEnv = (service: ServiceName) => ({
  SERVICE_PRIVATE_KEY: privateKeyText(DEV_SERVICE_KEYS[service].privateKey),
});

/**
 * A called service's trust list: `SERVICE_PUBLIC_KEYS`, `name=<public key>,…` for the callers whose
 * tokens it verifies (which caller may use which route is fixed in code). Default: every development
 * identity (refused in production).
 */
export const servicePublicKeysEnv = {
  SERVICE_PUBLIC_KEYS: z
    .string()
    .default(DEV_SERVICE_PUBLIC_KEYS)
    .superRefine((v, ctx) => {
      try {
        if (parsePublicKeys(v).size === 0) ctx.addIssue({ code: 'custom', message: 'lists no key' });
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
};

/** The admin CLI's identity (`ADMIN_PRIVATE_KEY`): the `admin` development key unless set. */
export const adminPrivateKeyEnv = {
  ADMIN_PRIVATE_KEY: privateKeyText(DEV_SERVICE_KEYS.admin.privateKey),
};

/** Settings that may instead be read from a file named by `<NAME>_FILE` (container secrets, volumes). */
export const FILE_SETTINGS = [
  'SERVICE_PRIVATE_KEY',
  'SERVICE_PUBLIC_KEYS',
  'ADMIN_PRIVATE_KEY',
  // The dashboard's OpenID Connect client secret (single sign-on).
  'OIDC_CLIENT_SECRET',
  // Billing's key of the webhook signing secrets at rest (compose generates it on first start).
  'WEBHOOK_SECRET_KEY',
  // Server URLs carry the service's own password (compose generates them on first start).
  'DATABASE_URL',
  'AMQP_URL',
  'REDIS_URL',
] as const;

/** `env` with each FILE_SETTINGS entry read from its `<NAME>_FILE` when that is set instead. */
function withFileSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  let out = env;
  const problems: string[] = [];
  for (const name of FILE_SETTINGS) {
    const path = env[`${name}_FILE`];
    if (!path) continue;
    if (env[name] !== undefined) {
      problems.push(`  ${name}_FILE: set either ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      out = { ...out, [name]: readFileSync(path, 'utf8').trim() };
    } catch (err) {
      problems.push(
        `  ${name}_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return out;
}

export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const parsed = schema.safeParse(withFileSettings(env));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** Secrets shipped in this repository (dev defaults, compose, examples): public, never for production. */
export const SHIPPED_DEFAULT_SECRETS: readonly string[] = [
  'tollgate-dev-service-secret-change-me',
  'tollgate-compose-secret-change-me',
  'demo-only-service-jwt-secret-0123456789abcdef',
];
/** Shortest secret accepted in production (e.g. `openssl rand -hex 32` gives 64 characters). */
export const MIN_PRODUCTION_SECRET_LENGTH = 32;

/**
 * Passwords refused in production inside a server URL: empty, or a default shipped here or by the
 * servers' images (compose used `tollgate/tollgate`; RabbitMQ's `guest`). Each service logs in with
 * its own generated password (docs/operations.md "Security").
 */
const DEFAULT_PASSWORDS = new Set([
  'guest',
  'postgres',
  'tollgate',
  'password',
  'redis',
  'rabbitmq',
  'admin',
  'secret',
]);
/** Settings holding a server URL whose password is checked in production. */
const SERVER_URL_SETTINGS = new Set(['DATABASE_URL', 'AMQP_URL', 'REDIS_URL']);

/** Why the password inside a server URL is not the operator's own, or null when it is. */
function defaultPasswordProblem(value: string): string | null {
  let password: string;
  try {
    password = decodeURIComponent(new URL(value).password);
  } catch {
    return null; // the setting's own schema reports the format
  }
  if (password === '')
    return 'has no password: in production each service logs in with its own (docs/operations.md "Security")';
  if (DEFAULT_PASSWORDS.has(password.toLowerCase()) || /change[-_ ]?me/i.test(password))
    return 'holds a default password: set this service\'s own (docs/operations.md "Security")';
  return null;
}

/** Settings holding private keys or trust lists: checked for development keys in production. */
const KEY_SETTINGS = ['SERVICE_PRIVATE_KEY', 'ADMIN_PRIVATE_KEY', 'SERVICE_PUBLIC_KEYS'] as const;

/** Whether `value` (a private key, or a `name=key,…` list) holds a development key. */
function holdsDevKey(name: (typeof KEY_SETTINGS)[number], value: string): boolean {
  try {
    if (name === 'SERVICE_PUBLIC_KEYS') return [...parsePublicKeys(value).values()].some(isDevServiceKey);
    return isDevServiceKey(parsePrivateKey(value));
  } catch {
    return false; // the setting's own schema reports the format
  }
}

/**
 * superRefine step for every service config: in production, every `*_SECRET` setting must be the
 * operator's own — not a secret shipped in this repository (or anything saying "change me"), and at
 * least MIN_PRODUCTION_SECRET_LENGTH characters — and no service key setting (`SERVICE_PRIVATE_KEY`,
 * `ADMIN_PRIVATE_KEY`, `SERVICE_PUBLIC_KEYS`) may hold a development key (they are public, in this
 * repository), so a deployment cannot accept tokens anyone can mint; and no server URL
 * (`DATABASE_URL`, `AMQP_URL`, `REDIS_URL`) may carry an empty or default password.
 */
export function refuseDevSecretInProduction(c: { NODE_ENV: string }, ctx: z.RefinementCtx): void {
  if (c.NODE_ENV !== 'production') return;
  for (const [name, value] of Object.entries(c as Record<string, unknown>)) {
    if (typeof value !== 'string') continue;
    if (SERVER_URL_SETTINGS.has(name)) {
      const problem = defaultPasswordProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      continue;
    }
    if ((KEY_SETTINGS as readonly string[]).includes(name)) {
      if (holdsDevKey(name as (typeof KEY_SETTINGS)[number], value)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message:
            'holds a development key (public, in this repository): generate your own (docs/operations.md "Service keys")',
        });
      }
      continue;
    }
    if (!name.endsWith('_SECRET')) continue;
    if (SHIPPED_DEFAULT_SECRETS.includes(value) || /change[-_ ]?me/i.test(value)) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'must be set in production to your own random value (this one is a public default)',
      });
    } else if (value.length < MIN_PRODUCTION_SECRET_LENGTH) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `must be at least ${MIN_PRODUCTION_SECRET_LENGTH} characters in production (e.g. openssl rand -hex 32)`,
      });
    }
  }
}
