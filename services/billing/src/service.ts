import type { AddressInfo } from 'node:net';
import { createServiceSigner, createServiceVerifier, parsePublicKeys } from '@tollgate/auth';
import { type Catalog, loadCatalog } from '@tollgate/catalog';
import { sql } from '@tollgate/db';
import { type UsageConsumer, usageTopology } from '@tollgate/events';
import { closeServer, listen } from '@tollgate/http';
import { createLogger, type Logger } from '@tollgate/logger';
import { serviceRegistry } from '@tollgate/metrics';
import { createRedisClient, type RedisClient } from '@tollgate/redis';
import { createSpendStore, type SpendTimings } from '@tollgate/spend';
import type express from 'express';
import type { Registry } from 'prom-client';
import { createAlerts } from './alerts/alerts';
import type { BillingConfig } from './config';
import { createCreditsService } from './credits/credits.service';
import { type BillingDb, createBillingDb, migrateBillingDb } from './database';
import { createBodiesRetention } from './generations/bodies';
import { createGenerationPartitions, type GenerationPartitions } from './generations/partitions';
import { createBillingApp } from './http/app';
import { type KeyOwners, keysServiceOwners } from './keys/key-owners';
import { recordRefusals } from './refusals/refusals.repository';
import { createSpendService } from './spend/spend.service';
import { usageConsumers } from './usage/partition-consumers';
import { createUsageRecorder, type UsageRecorder } from './usage/usage.recorder';
import { createUsageChecks } from './usage/usage-checks';
import { createUsageEventHandler } from './usage/usage-event.handler';
import { workerMetrics } from './usage/worker-metrics';

export interface BillingHandle {
  /** e.g. http://127.0.0.1:8082 */
  url: string;
  port: number;
  /** The express app it serves (tests read its routes). */
  app: express.Express;
  db: BillingDb;
  redis: RedisClient;
  recorder: UsageRecorder;
  /** The monthly partitions of the generation records (created ahead, dropped past the retention). */
  partitions: GenerationPartitions;
  /** Prometheus registry (main.ts serves it on METRICS_HOST:METRICS_PORT). */
  metrics: Registry;
  /** null when WORKER_ENABLED=false. */
  consumer: UsageConsumer | null;
  /** Stops HTTP, lets the worker finish (and ack) its batch, closes Postgres and Redis. */
  close(): Promise<void>;
}

export interface BillingOptions {
  clock?: () => Date;
  /** Who owns a key (default: the keys service at KEYS_URL). */
  owners?: KeyOwners;
  logger?: Logger;
  timings?: Partial<SpendTimings>;
  /** The catalog events are priced with (default: CATALOG_PATH, prices only); tests pass the proxy's. */
  catalog?: Catalog;
}

/** Billing's Redis client (@tollgate/redis: a node or a cluster by REDIS_URL / REDIS_CLUSTER_NODES). */
function billingRedis(config: BillingConfig, logger: Logger): RedisClient {
  const redis = createRedisClient(
    { url: config.REDIS_URL, clusterNodes: config.REDIS_CLUSTER_NODES },
    {
      maxRetriesPerRequest: 2,
      lazyConnect: false,
      // Reconnect at most 500 ms apart (default 2 s): spend counter rebuilds wait on this connection.
      retryStrategy: (times) => Math.min(times * 50, 500),
    },
  );
  redis.on('error', (err) => logger.debug({ err: err.message }, 'redis error'));
  return redis;
}

/** Who owns a key: the keys service at KEYS_URL, asked with billing's own identity. */
const keysOwners = (config: BillingConfig, logger: Logger): KeyOwners =>
  keysServiceOwners({
    keysUrl: config.KEYS_URL,
    signer: createServiceSigner('billing', config.SERVICE_PRIVATE_KEY),
    timeoutMs: config.SERVICE_TIMEOUT_MS,
    logger,
  });

/** Starts billing in-process (migrates first): HTTP API + usage worker. `PORT=0` picks a free port. */
export async function startBilling(
  config: BillingConfig,
  options: BillingOptions = {},
): Promise<BillingHandle> {
  const logger =
    options.logger ?? createLogger({ name: 'billing', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
  const clock = options.clock ?? (() => new Date());
  const db = createBillingDb(config.DATABASE_URL, { max: 10 });
  const redis = billingRedis(config, logger);
  try {
    await migrateBillingDb(db);
  } catch (err) {
    await db.destroy();
    redis.disconnect();
    throw err;
  }

  const partitions = createGenerationPartitions(db, {
    aheadMonths: config.GENERATION_PARTITIONS_AHEAD,
    retentionDays: config.GENERATION_RETENTION_DAYS,
    clock,
    logger,
  });
  const spendStore = createSpendStore(redis, { prefix: config.REDIS_PREFIX, timings: options.timings });
  const owners = options.owners ?? keysOwners(config, logger);
  const alerts = createAlerts({ config, db, owners, logger, clock });
  const recorder = createUsageRecorder({
    db,
    spend: spendStore,
    logger,
    clock,
    appsPerDay: config.ANALYTICS_APPS_PER_DAY,
    partitions,
    alerts: alerts.hook,
  });
  await partitions.start();
  const bodiesRetention = createBodiesRetention(db, {
    retentionDays: config.BODIES_RETENTION_DAYS,
    generationCutoff: partitions.cutoff,
    clock,
    logger,
  });
  await bodiesRetention.start();
  const credits = createCreditsService({ db, spend: spendStore, logger });
  const spend = createSpendService({ db, spend: spendStore, clock });
  // Billing prices events itself: the proxy's catalog, prices only (no provider URL or key needed).
  const checks = createUsageChecks({
    checks: config.USAGE_CHECKS,
    catalog: options.catalog ?? loadCatalog(config.CATALOG_PATH, {}, { pricesOnly: true }),
    signers: new Map([...parsePublicKeys(config.SERVICE_PUBLIC_KEYS)].filter(([name]) => name === 'proxy')),
    owners,
    maxSendDelayMs: config.USAGE_MAX_SEND_DELAY_MS,
    now: () => clock().getTime(),
  });

  const metrics = serviceRegistry('billing');
  const worker = workerMetrics(metrics);
  const topology = usageTopology(config.AMQP_PREFIX, config.USAGE_PARTITIONS);
  const { consumer, partitions: usagePartitions } = usageConsumers(config, {
    topology,
    logger,
    verifyMessage: checks.verifyMessage,
    handle: createUsageEventHandler({
      recorder,
      logger,
      onCommitted: worker.committed,
      refuse: checks.foreignKeys,
      recordRefusals: (events) => recordRefusals(db, events),
    }),
  });

  worker.watch(consumer, usagePartitions);
  if (config.WORKER_ENABLED) {
    alerts.delivery.start();
    alerts.retention.start();
  }
  const app = createBillingApp({
    db,
    credits,
    spend,
    verifier: createServiceVerifier('billing', config.SERVICE_PUBLIC_KEYS),
    owners,
    webhooks: alerts.webhooks,
    clock,
    logger,
    metrics,
    retentionCutoff: partitions.cutoff,
    deadLetters: { amqpUrl: config.AMQP_URL, topology },
    readiness: {
      postgres: async () => {
        await sql`select 1`.execute(db);
      },
      redis: async () => {
        await redis.ping();
      },
      ...(consumer
        ? {
            rabbitmq: async () => {
              if (!consumer.stats().connected) throw new Error('not consuming');
            },
          }
        : {}),
    },
  });

  let server: Awaited<ReturnType<typeof listen>>;
  try {
    server = await listen(app, config.PORT, config.HOST, logger);
  } catch (err) {
    await consumer?.close();
    await alerts.close();
    await db.destroy();
    redis.disconnect();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  logger.info({ port, worker: Boolean(consumer) }, 'billing listening');

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    app,
    db,
    redis,
    recorder,
    partitions,
    metrics,
    consumer,
    close() {
      closing ??= (async () => {
        partitions.stop();
        bodiesRetention.stop();
        await closeServer(server);
        await consumer?.close();
        await alerts.close();
        await recorder.close();
        await owners.close();
        await db.destroy();
        redis.disconnect();
      })();
      return closing;
    },
  };
}
