import type { AddressInfo } from 'node:net';
import { createServiceSigner, createServiceVerifier } from '@tollgate/auth';
import { type Catalog, loadCatalog } from '@tollgate/catalog';
import { sql } from '@tollgate/db';
import { clientAddressResolver, closeServer, listen } from '@tollgate/http';
import { createLogger, type Logger } from '@tollgate/logger';
import { serviceRegistry } from '@tollgate/metrics';
import type { Registry } from 'prom-client';
import { type AuthService, createAuthService } from './auth/auth.service';
import type { DashboardConfig } from './config';
import { createDashboardDb, type DashboardDb, migrateDashboardDb } from './database';
import { createDashboardApp } from './http/app';
import { createSsoClient } from './sso/sso.client';
import { createSsoService } from './sso/sso.service';
import { createInternalClient } from './upstream/internal-client';
import { createWebhooksClient } from './upstream/webhooks-client';
import { createUsersService } from './users/users.service';

export interface DashboardHandle {
  /** e.g. http://127.0.0.1:8083 */
  url: string;
  port: number;
  db: DashboardDb;
  auth: AuthService;
  /** Prometheus registry (main.ts serves it on METRICS_HOST:METRICS_PORT). */
  metrics: Registry;
  close(): Promise<void>;
}

export interface DashboardOptions {
  logger?: Logger;
  clock?: () => Date;
  catalog?: Catalog;
}

/** Starts the dashboard in-process (migrates its schema first). `PORT=0` picks a free port. */
export async function startDashboard(
  config: DashboardConfig,
  options: DashboardOptions = {},
): Promise<DashboardHandle> {
  const logger =
    options.logger ?? createLogger({ name: 'dashboard', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
  const clock = options.clock ?? (() => new Date());
  const catalog = options.catalog ?? loadCatalog(config.CATALOG_PATH);
  const db = createDashboardDb(config.DATABASE_URL, { max: 10 });
  try {
    await migrateDashboardDb(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const auth = createAuthService({
    db,
    clock,
    sessionTtlMs: config.SESSION_TTL_MINUTES * 60_000,
    sessionIdleMs: config.SESSION_IDLE_MINUTES * 60_000,
    inviteTtlMs: config.INVITE_TTL_HOURS * 3_600_000,
    maxFailures: config.SIGNIN_MAX_FAILURES,
    windowMs: config.SIGNIN_WINDOW_MINUTES * 60_000,
    backoffBaseMs: config.SIGNIN_BACKOFF_SECONDS * 1000,
  });
  // Passes the current request id on by itself (request context of @tollgate/http).
  const client = createInternalClient({
    keysUrl: config.KEYS_URL,
    billingUrl: config.BILLING_URL,
    signer: createServiceSigner('dashboard', config.SERVICE_PRIVATE_KEY),
    timeoutMs: config.SERVICE_TIMEOUT_MS,
    logger,
  });
  const sso = config.SSO
    ? createSsoService({ db, clock, settings: config.SSO, client: createSsoClient(config.SSO, logger) })
    : null;
  const webhooks = createWebhooksClient({
    billingUrl: config.BILLING_URL,
    signer: createServiceSigner('dashboard', config.SERVICE_PRIVATE_KEY),
    timeoutMs: config.SERVICE_TIMEOUT_MS,
    logger,
  });
  const metrics = serviceRegistry('dashboard');
  const app = createDashboardApp({
    metrics,
    db,
    auth,
    users: createUsersService({ db, clock, inviteTtlMs: config.INVITE_TTL_HOURS * 3_600_000 }),
    client,
    webhooks,
    catalog,
    verifier: createServiceVerifier('dashboard', config.SERVICE_PUBLIC_KEYS),
    uiDir: config.UI_DIR,
    publicUrl: config.PUBLIC_URL,
    secureCookie: config.COOKIE_SECURE,
    clientAddress: clientAddressResolver(config.TRUSTED_PROXIES),
    clock,
    logger,
    sso,
    ssoRedirectUrl: config.SSO?.redirectUrl ?? null,
    passwordSignIn: config.PASSWORD_SIGN_IN,
    readiness: {
      postgres: async () => {
        await sql`select 1`.execute(db);
      },
    },
  });
  let server: Awaited<ReturnType<typeof listen>>;
  try {
    server = await listen(app, config.PORT, config.HOST, logger);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  logger.info({ port }, 'dashboard listening');
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    db,
    auth,
    metrics,
    close() {
      closing ??= (async () => {
        await closeServer(server);
        await client.close();
        await webhooks.close();
        await db.destroy();
      })();
      return closing;
    },
  };
}
