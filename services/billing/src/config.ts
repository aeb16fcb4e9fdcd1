import { fileURLToPath } from 'node:url';
import {
  commonEnv,
  defaults,
  envBoolean,
  envPort,
  loadConfig as load,
  redisEnv,
  refuseDevSecretInProduction,
  servicePrivateKeyEnv,
  servicePublicKeysEnv,
} from '@tollgate/config';
import { parseUsagePartitionList, usagePartitionsEnv } from '@tollgate/events';
import { metricsEnv } from '@tollgate/metrics';
import { z } from 'zod';
import { webhookEnv } from './alerts/alerts.config';

/** The dev catalog of the repo, resolved relative to this file (works from any cwd). */
const DEFAULT_CATALOG_PATH = fileURLToPath(new URL('../../../infra/catalog/dev.yaml', import.meta.url));

/** Billing's checks of each usage event before it is recorded (docs/architecture.md "Usage events"). */
const USAGE_CHECKS = ['signature', 'cost', 'key', 'time'] as const;
export type UsageCheck = (typeof USAGE_CHECKS)[number];

const usageChecks = z
  .string()
  .default(USAGE_CHECKS.join(','))
  .transform((v, ctx) => {
    const names = v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0 && s !== 'none');
    const unknown = names.filter((n) => !(USAGE_CHECKS as readonly string[]).includes(n));
    if (unknown.length > 0)
      ctx.addIssue({
        code: 'custom',
        message: `unknown check ${unknown.join(', ')} (known: ${USAGE_CHECKS})`,
      });
    return new Set(names as UsageCheck[]);
  });

export const billingConfigSchema = z
  .object({
    ...commonEnv,
    ...redisEnv,
    ...servicePublicKeysEnv,
    /** Billing's own identity: it asks the keys service who owns a key. */
    ...servicePrivateKeyEnv('billing'),
    PORT: envPort(8082),
    KEYS_URL: z.string().url().default('http://127.0.0.1:8081'),
    /** Timeout of calls to the keys service. */
    SERVICE_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
    /** The model catalog billing prices events with: the proxy's, read for prices only. */
    CATALOG_PATH: z.string().min(1).default(DEFAULT_CATALOG_PATH),
    /**
     * Checks of every usage event (comma-separated; all by default, and all required in production):
     * `signature` (the proxy's Ed25519 signature), `cost` (recomputed from the tokens, at most the
     * model's worst case), `key` (the key belongs to the account), `time` (finished_at near the
     * signed sent-at time). A refused event is dead-lettered with the reason.
     */
    USAGE_CHECKS: usageChecks,
    /** Latest an event may be handed to the publisher after its `finished_at` (`time` check). */
    USAGE_MAX_SEND_DELAY_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(10 * 60_000),
    /** Prometheus metrics on their own listener (METRICS_HOST:METRICS_PORT), never on PORT. */
    ...metricsEnv(9466),
    /** Internal service: loopback by default; set 0.0.0.0 (or an internal address) inside a private network. */
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z.string().url().default(defaults.databaseUrl),
    AMQP_URL: z.string().url().default(defaults.amqpUrl),
    /** Prefix of the RabbitMQ exchange and queue names (must match the proxy's). */
    AMQP_PREFIX: z.string().min(1).default('tollgate'),
    /**
     * Usage partitions (queues `<AMQP_PREFIX>.billing.usage.p<i>`; 1 = the single queue
     * `<AMQP_PREFIX>.billing.usage`). Must equal the proxies' USAGE_PARTITIONS (docs/operations.md
     * "Usage partitions" for changing it: drain, then switch).
     */
    USAGE_PARTITIONS: usagePartitionsEnv,
    /**
     * The partitions this worker consumes: `all` (default) or indexes and ranges (`0,2-3`). Each
     * partition queue has one active consumer at a time; the other workers subscribed to it wait as
     * standbys and take over when it goes.
     */
    USAGE_WORKER_PARTITIONS: z.string().default('all'),
    /** Most usage events written per Postgres transaction. */
    BATCH_SIZE: z.coerce.number().int().min(1).max(1000).default(1000),
    /** Longest wait for a batch to fill before it is written anyway (records visible within ~this). */
    BATCH_TIMEOUT_MS: z.coerce.number().int().min(1).max(1000).default(50),
    /**
     * Batches written at the same time (each its own transaction): the next batches are inserted
     * while an earlier one commits. Acked strictly in delivery order either way. 3 drained a backlog
     * fastest in bench/compare (2: slower; 4: no better).
     */
    CONCURRENT_BATCHES: z.coerce.number().int().min(1).max(4).default(3),
    /** Unacknowledged deliveries the broker may push; at least 2 × BATCH_SIZE keeps the pipe full. */
    PREFETCH: z.coerce.number().int().min(1).max(10_000).default(2000),
    /**
     * Distinct X-Titles (apps) per account and UTC day that get roll-up rows of their own; the rest
     * roll up as the app "(other)" (generation records keep every title).
     */
    ANALYTICS_APPS_PER_DAY: z.coerce.number().int().min(1).max(100_000).default(200),
    /**
     * Days generation records are kept (unset: forever). Whole months are dropped (a month goes once
     * its last day is this many days old), so a record lives between N days and N days + a month.
     * The roll-ups, spend totals and credits are never dropped.
     */
    GENERATION_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
    /**
     * Days the opt-in bodies (prompt and answer of keys with `store_bodies`) are kept; purged every
     * hour by `created_at`, never kept longer than GENERATION_RETENTION_DAYS when that is shorter.
     */
    BODIES_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
    /** Monthly partitions of the generation records created ahead of the current month. */
    GENERATION_PARTITIONS_AHEAD: z.coerce.number().int().min(1).max(24).default(3),
    /** Run the usage-event worker in this process (false: read API only). */
    WORKER_ENABLED: envBoolean(true),
    /** Alert webhooks (alerts/alerts.config.ts, docs/configuration.md). */
    ...webhookEnv,
  })
  .superRefine((c, ctx) => {
    refuseDevSecretInProduction(c, ctx);
    const off = USAGE_CHECKS.filter((n) => !c.USAGE_CHECKS.has(n));
    if (c.NODE_ENV === 'production' && off.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['USAGE_CHECKS'],
        message: `every check is required in production (missing: ${off.join(', ')})`,
      });
    }
    try {
      parseUsagePartitionList(c.USAGE_WORKER_PARTITIONS, c.USAGE_PARTITIONS);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['USAGE_WORKER_PARTITIONS'], message: (err as Error).message });
    }
    if (c.PREFETCH < c.BATCH_SIZE) {
      ctx.addIssue({ code: 'custom', path: ['PREFETCH'], message: 'must be at least BATCH_SIZE' });
    }
  });

export type BillingConfig = z.output<typeof billingConfigSchema>;

/** Parses billing's environment. Throws ConfigError listing every problem. */
export const loadConfig = (env: NodeJS.ProcessEnv = process.env): BillingConfig =>
  load(billingConfigSchema, env);
