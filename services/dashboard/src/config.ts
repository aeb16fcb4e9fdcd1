import { fileURLToPath } from 'node:url';
import {
  commonEnv,
  defaults,
  envPort,
  loadConfig as load,
  refuseDevSecretInProduction,
  servicePrivateKeyEnv,
  servicePublicKeysEnv,
} from '@tollgate/config';
import { trustedProxiesEnv } from '@tollgate/http';
import { metricsEnv } from '@tollgate/metrics';
import { z } from 'zod';
import { checkSsoEnv, ssoEnv, ssoSettings } from './sso/sso.config';

/** Where `pnpm --filter @tollgate/dashboard build:ui` writes the single-page app. */
const DEFAULT_UI_DIR = fileURLToPath(new URL('../ui/dist', import.meta.url));
/** The catalog `make dev` serves (its prices are shown on the Models page). */
const DEFAULT_CATALOG_PATH = fileURLToPath(new URL('../../../infra/catalog/dev.yaml', import.meta.url));

/** The dashboard's variables (the object, for tools that list them). */
export const dashboardEnv = z.object({
  ...commonEnv,
  ...servicePrivateKeyEnv('dashboard'),
  ...servicePublicKeysEnv,
  PORT: envPort(8083),
  /** Prometheus metrics on their own listener (METRICS_HOST:METRICS_PORT), never on PORT. */
  ...metricsEnv(9467),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Which X-Forwarded-For entries name the client, for the sign-in throttle (@tollgate/http). */
  ...trustedProxiesEnv,
  DATABASE_URL: z.string().url().default(defaults.databaseUrl),
  KEYS_URL: z.string().url().default('http://127.0.0.1:8081'),
  BILLING_URL: z.string().url().default('http://127.0.0.1:8082'),
  /** Deadline of one call to keys or billing. */
  SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  CATALOG_PATH: z.string().min(1).default(DEFAULT_CATALOG_PATH),
  /** The built single-page app (static files); a missing directory serves a hint instead. */
  UI_DIR: z.string().min(1).default(DEFAULT_UI_DIR),
  /** The address users open (sign-in links printed by invites and the admin CLI). */
  PUBLIC_URL: z.string().url().optional(),
  /** Absolute lifetime of a session. */
  SESSION_TTL_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(60 * 24 * 30)
    .default(12 * 60),
  /** A session unused this long ends (idle timeout), however long SESSION_TTL_MINUTES is. */
  SESSION_IDLE_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(60 * 24 * 30)
    .default(60),
  /** How long an invitation (sign-in link) stays valid. */
  INVITE_TTL_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(72),
  /**
   * Failed sign-ins per (email, client address) within the window before backoff starts (a client
   * address, across emails, gets 10× that). Never a lock of the email alone (issue 23).
   */
  SIGNIN_MAX_FAILURES: z.coerce.number().int().min(1).max(1000).default(5),
  /** The first backoff past SIGNIN_MAX_FAILURES; it doubles with each further failure, up to the window. */
  SIGNIN_BACKOFF_SECONDS: z.coerce.number().min(0.1).max(3600).default(1),
  SIGNIN_WINDOW_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 60)
    .default(15),
  /** Session cookie `Secure` flag; defaults to on everywhere but NODE_ENV=development. */
  COOKIE_SECURE: z.enum(['true', 'false', '1', '0'], { error: 'expected true or false' }).optional(),
  /** Single sign-on (OIDC) and password sign-in on/off: sso/sso.config.ts. */
  ...ssoEnv,
});

export const dashboardConfigSchema = dashboardEnv
  .superRefine((c, ctx) => {
    refuseDevSecretInProduction(c, ctx);
    checkSsoEnv(c, ctx);
  })
  .transform((c) => ({
    ...c,
    SSO: ssoSettings({ ...c, PUBLIC_URL: c.PUBLIC_URL ?? `http://127.0.0.1:${c.PORT}` }),
    COOKIE_SECURE:
      c.COOKIE_SECURE === undefined
        ? c.NODE_ENV !== 'development'
        : c.COOKIE_SECURE === 'true' || c.COOKIE_SECURE === '1',
    PUBLIC_URL: c.PUBLIC_URL ?? `http://127.0.0.1:${c.PORT}`,
  }));

export type DashboardConfig = z.output<typeof dashboardConfigSchema>;

/** Parses the dashboard's environment. Throws ConfigError listing every problem. */
export const loadConfig = (env: NodeJS.ProcessEnv = process.env): DashboardConfig =>
  load(dashboardConfigSchema, env);
