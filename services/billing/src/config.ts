import {
  commonEnv,
  defaults,
  envBoolean,
  envPort,
  loadConfig as load,
  redisEnv,
  refuseDevSecretInProduction,
  servicePublicKeysEnv,
} from '@tollgate/config';
import { metricsEnv } from '@tollgate/metrics';
import { z } from 'zod';

export const billingConfigSchema = z
  .object({
    ...commonEnv,
    ...redisEnv,
    ...servicePublicKeysEnv,
    PORT: envPort(8082),
    /** Prometheus metrics on their own listener (METRICS_HOST:METRICS_PORT), never on PORT. */
    ...metricsEnv(9466),
    /** Internal service: loopback by default; set 0.0.0.0 (or an internal address) inside a private network. */
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z.string().url().default(defaults.databaseUrl),
    AMQP_URL: z.string().url().default(defaults.amqpUrl),
    /** Prefix of the RabbitMQ exchange and queue names (must match the proxy's). */
    AMQP_PREFIX: z.string().min(1).default('tollgate'),
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
    /** Run the usage-event worker in this process (false: read API only). */
    WORKER_ENABLED: envBoolean(true),
  })
  .superRefine((c, ctx) => {
    refuseDevSecretInProduction(c, ctx);
    if (c.PREFETCH < c.BATCH_SIZE) {
      ctx.addIssue({ code: 'custom', path: ['PREFETCH'], message: 'must be at least BATCH_SIZE' });
    }
  });

export type BillingConfig = z.output<typeof billingConfigSchema>;

/** Parses billing's environment. Throws ConfigError listing every problem. */
export const loadConfig = (env: NodeJS.ProcessEnv = process.env): BillingConfig =>
  load(billingConfigSchema, env);
