import {
  commonEnv,
  defaults,
  envPort,
  loadConfig as load,
  redisEnv,
  refuseDevSecretInProduction,
  servicePrivateKeyEnv,
  servicePublicKeysEnv,
} from '@tollgate/config';
import { metricsEnv } from '@tollgate/metrics';
import { z } from 'zod';

const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim().replace(/\/+$/, '') : undefined))
  .pipe(z.string().url().optional());

export const keysConfigSchema = z
  .object({
    ...commonEnv,
    ...redisEnv,
    ...servicePrivateKeyEnv('keys'),
    ...servicePublicKeysEnv,
    PORT: envPort(8081),
    /** Prometheus metrics on their own listener (METRICS_HOST:METRICS_PORT), never on PORT. */
    ...metricsEnv(9465),
    /** Internal service: loopback by default; set 0.0.0.0 (or an internal address) inside a private network. */
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z.string().url().default(defaults.databaseUrl),
    /**
     * Billing's internal API, for usage figures on key objects and billing's audit entries in
     * `GET /audit`. Unset: usage figures are zero and `GET /audit` has no billing entries.
     */
    BILLING_URL: optionalUrl,
    /**
     * The dashboard's internal API, for its audit entries (users, roles, teams, sessions) in the
     * merged `GET /audit` and a team's members (`/teams/{id}/members`, dashboard users). Unset:
     * `GET /audit` lists the keys service's and billing's entries only; the member routes answer 503.
     */
    DASHBOARD_URL: optionalUrl,
    /** How often pending `last_used_at` values are moved from Redis to Postgres. */
    LAST_USED_FLUSH_MS: z.coerce.number().int().min(50).max(3_600_000).default(5000),
  })
  .superRefine(refuseDevSecretInProduction);

export type KeysConfig = z.output<typeof keysConfigSchema>;

/** Parses the keys service's environment. Throws ConfigError listing every problem. */
export const loadConfig = (env: NodeJS.ProcessEnv = process.env): KeysConfig => load(keysConfigSchema, env);
