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
  /** Development-only secret; production deployments must set SERVICE_JWT_SECRET. */
  serviceJwtSecret: 'tollgate-dev-service-secret-change-me',
} as const;

/** The env entries every service shares. Spread into a service's z.object({...}). */
export const commonEnv = {
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_PRETTY: envBoolean(false),
};

export const redisEnv = {
  REDIS_URL: z.string().url().default(defaults.redisUrl),
  /** Every Redis key Tollgate writes starts with this; isolates stacks and test runs sharing a server. */
  REDIS_PREFIX: z.string().default('tg:'),
};

export const serviceJwtEnv = {
  SERVICE_JWT_SECRET: z.string().min(16).default(defaults.serviceJwtSecret),
};

export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** Secrets shipped in this repository (dev defaults, compose, examples): public, never for production. */
export const SHIPPED_DEFAULT_SECRETS: readonly string[] = [
  defaults.serviceJwtSecret,
  'tollgate-compose-secret-change-me',
];
/** Shortest secret accepted in production (e.g. `openssl rand -hex 32` gives 64 characters). */
export const MIN_PRODUCTION_SECRET_LENGTH = 32;

/**
 * superRefine step for every service config: in production, every `*_SECRET` setting must be the
 * operator's own — not a secret shipped in this repository (or anything saying "change me"), and at
 * least MIN_PRODUCTION_SECRET_LENGTH characters — so a deployment cannot accept tokens anyone can mint.
 */
export function refuseDevSecretInProduction(c: { NODE_ENV: string }, ctx: z.RefinementCtx): void {
  if (c.NODE_ENV !== 'production') return;
  for (const [name, value] of Object.entries(c as Record<string, unknown>)) {
    if (!name.endsWith('_SECRET') || typeof value !== 'string') continue;
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
