import type { AddressInfo } from 'node:net';
import { createServiceVerifier } from '@tollgate/auth';
import { sql } from '@tollgate/db';
import { closeServer, listen } from '@tollgate/http';
import { createLogger, type Logger } from '@tollgate/logger';
import { serviceRegistry } from '@tollgate/metrics';
import type express from 'express';
import type { Registry } from 'prom-client';
import { createRemoteAuditLogs } from './audit/audit-sources';
import type { KeysConfig } from './config';
import { createKeysApp } from './http/app';
import { startLastUsedFlusher } from './last-used/last-used.flusher';
import { createKeysRuntime, type KeysRuntime, type KeysRuntimeOptions } from './runtime';
import { createTeamMembers } from './teams/team-members.client';

export interface KeysServiceHandle {
  /** e.g. http://127.0.0.1:8081 */
  url: string;
  port: number;
  /** The express app it serves (tests read its routes). */
  app: express.Express;
  /** Prometheus registry (main.ts serves it on METRICS_HOST:METRICS_PORT). */
  metrics: Registry;
  /** Moves pending last_used_at values to Postgres now (otherwise every LAST_USED_FLUSH_MS). */
  flushLastUsed(): Promise<number>;
  /** Stops accepting requests, flushes last_used_at, closes Postgres and Redis. */
  close(): Promise<void>;
  /** The wiring, for tests of this service. */
  runtime: KeysRuntime;
}

/** Starts the keys service (migrates first). `PORT=0` picks a free port. */
export async function startKeysService(
  config: KeysConfig,
  options: { logger?: Logger } & Partial<Omit<KeysRuntimeOptions, 'logger'>> = {},
): Promise<KeysServiceHandle> {
  const logger =
    options.logger ?? createLogger({ name: 'keys', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
  const runtime = await createKeysRuntime(config, { ...options, logger });
  const flusher = startLastUsedFlusher({
    db: runtime.db,
    store: runtime.lastUsed,
    intervalMs: config.LAST_USED_FLUSH_MS,
    logger,
  });
  const metrics = serviceRegistry('keys');
  const remoteAudit = createRemoteAuditLogs({
    billingUrl: config.BILLING_URL,
    dashboardUrl: config.DASHBOARD_URL,
    privateKey: config.SERVICE_PRIVATE_KEY,
    logger,
  });
  const members = createTeamMembers({
    dashboardUrl: config.DASHBOARD_URL,
    privateKey: config.SERVICE_PRIVATE_KEY,
    logger,
  });
  const app = createKeysApp({
    metrics,
    db: runtime.db,
    keys: runtime.keys,
    teams: runtime.teams,
    accounts: runtime.accounts,
    presenter: runtime.presenter,
    remoteAudit,
    members,
    verifier: createServiceVerifier('keys', config.SERVICE_PUBLIC_KEYS),
    logger,
    readiness: {
      postgres: async () => {
        await sql`select 1`.execute(runtime.db);
      },
      redis: async () => {
        await runtime.redis.ping();
      },
    },
  });
  let server: Awaited<ReturnType<typeof listen>>;
  try {
    server = await listen(app, config.PORT, config.HOST, logger);
  } catch (err) {
    await flusher.stop();
    await remoteAudit.close();
    await members.close();
    await runtime.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  logger.info({ port }, 'keys service listening');
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    app,
    metrics,
    flushLastUsed: () => flusher.flush(),
    runtime,
    close() {
      closing ??= (async () => {
        await closeServer(server);
        await flusher.stop();
        await remoteAudit.close();
        await members.close();
        await runtime.close();
      })();
      return closing;
    },
  };
}
