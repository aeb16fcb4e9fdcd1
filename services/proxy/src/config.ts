import { fileURLToPath } from 'node:url';
import {
  commonEnv,
  envPort,
  loadConfig as load,
  redisEnv,
  refuseDevSecretInProduction,
  serviceJwtEnv,
} from '@tollgate/config';
import { z } from 'zod';

/** The dev catalog of the repo, resolved relative to this file (works from any cwd). */
export const DEFAULT_CATALOG_PATH = fileURLToPath(
  new URL('../../../infra/catalog/dev.yaml', import.meta.url),
);

const url = z.string().url();
const positiveMs = z.coerce.number().int().positive();

export const proxyEnv = z
  .object({
    ...commonEnv,
    ...redisEnv,
    ...serviceJwtEnv,
    PORT: envPort(8080),
    HOST: z.string().min(1).default('0.0.0.0'),
    AMQP_URL: url.default('amqp://guest:guest@127.0.0.1:5672'),
    /** Prefix of the usage exchange and queues (see @tollgate/events usageTopology). */
    AMQP_PREFIX: z.string().min(1).default('tollgate'),
    KEYS_URL: url.default('http://127.0.0.1:8081'),
    BILLING_URL: url.default('http://127.0.0.1:8082'),
    CATALOG_PATH: z.string().min(1).default(DEFAULT_CATALOG_PATH),
    /** SSE comment sent while a stream has been silent this long (slow first token). */
    KEEPALIVE_INTERVAL_MS: positiveMs.default(15_000),
    /** Upstream time to response headers, and the longest silence inside a response body. */
    UPSTREAM_TIMEOUT_MS: positiveMs.default(120_000),
    /** Timeout of calls to the keys and billing services. */
    SERVICE_TIMEOUT_MS: positiveMs.default(5_000),
    /** How long SIGTERM waits for in-flight requests before cutting them. */
    SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
    /** Usage events held in memory while RabbitMQ is unreachable. */
    PUBLISHER_MAX_BUFFERED: z.coerce.number().int().positive().default(100_000),
    /** Maximum JSON body of a chat completion request. */
    BODY_LIMIT: z
      .string()
      .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'expected a size like 10mb')
      .default('10mb'),
    /**
     * Spend limits and credits (packages/spend): `redis` checks the Redis spend counters before each
     * completion (rebuilt through billing at BILLING_URL when missing); `off` admits everything
     * (tests with a billing stand-in only).
     */
    SPEND_GUARD: z.enum(['redis', 'off']).default('redis'),
    /** node:cluster workers (1 = no cluster). */
    WORKERS: z.coerce.number().int().min(1).max(256).default(1),
  })
  .superRefine(refuseDevSecretInProduction);

export type ProxyConfig = z.output<typeof proxyEnv>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  return load(proxyEnv, env);
}
