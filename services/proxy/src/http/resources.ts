import { parsePrivateKey, type ServiceSigner } from '@tollgate/auth';
import {
  createMessageSigner,
  createUsagePublisher,
  type UsagePublisher,
  usageTopology,
} from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import { createRedisClient, type RedisClient, whenReady } from '@tollgate/redis';
import { createRedisSpendGuard } from '@tollgate/spend';
import { type ProxyConfig, spoolDir } from '../config';
import type { ProxyMetrics } from '../metrics/metrics';
import type { SpendGuard } from '../spend/guard';

/** REDIS_URL (+ REDIS_CLUSTER_NODES): a node or a cluster (@tollgate/redis). */
const redisConnection = (c: ProxyConfig) => ({ url: c.REDIS_URL, clusterNodes: c.REDIS_CLUSTER_NODES });

// The proxy's connections, built once at start-up (http/app.ts startProxy): Redis, the usage
// publisher, the Redis spend guard.

/**
 * The proxy's Redis client, connected (or, after 5 s, left connecting: the proxy then authenticates
 * through the keys service until Redis is ready).
 */
export async function connectRedis(config: ProxyConfig, logger: Logger): Promise<RedisClient> {
  const redis = createRedisClient(redisConnection(config), {
    // The commands of one event-loop turn in one socket write (an admission and the settles riding
    // with it; at load, many requests' commands): @tollgate/redis CorkedRedis, the batching of
    // ioredis auto-pipelining without its per-flush Pipeline (bench/README.md "JSON request CPU").
    batchWrites: true,
    // Fail fast when Redis is down: auth then falls back to the keys service.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    // A cluster's planned failover (CLUSTER FAILOVER) holds the master's writes until its replica
    // has taken over, up to ~1 s on a loaded host: admissions wait for it rather than fail with 503
    // (docs/operations.md "Redis Cluster failover").
    clusterCommandTimeout: 3_000,
    lazyConnect: false,
    // Reconnect at most 500 ms apart (ioredis' default backs off to 2 s): every admission needs
    // Redis, so each second of backoff after Redis is back is a second of 503s (fault suite 3).
    retryStrategy: (times) => Math.min(times * 50, 500),
  });
  redis.on('error', (err: unknown) => logger.debug({ err }, 'redis error'));
  // Without an offline queue, commands sent before the connection is ready fail: wait for it
  // (bounded; if Redis is down the proxy starts anyway and authenticates through the keys service).
  if (!(await whenReady(redis, 5_000)))
    logger.warn('redis not ready at start: authenticating through the keys service until it is');
  return redis;
}

/** The usage publisher on AMQP_URL / AMQP_PREFIX, spooling to disk while the broker is away. */
export function usagePublisher(config: ProxyConfig, logger: Logger): UsagePublisher {
  return createUsagePublisher({
    url: config.AMQP_URL,
    topology: usageTopology(config.AMQP_PREFIX, config.USAGE_PARTITIONS),
    logger,
    maxBuffered: config.PUBLISHER_MAX_BUFFERED,
    eventsPerMessage: config.PUBLISHER_EVENTS_PER_MESSAGE,
    lingerMs: config.PUBLISHER_LINGER_MS,
    spool: {
      // A private (0700) directory per instance under the state directory (@tollgate/events spool-dir).
      dir: spoolDir(config),
      instance: config.AMQP_PREFIX,
      maxBytes: config.SPOOL_MAX_BYTES,
    },
    // Billing records only messages signed with the proxy's key (not merely its broker user's).
    signer: createMessageSigner('proxy', parsePrivateKey(config.SERVICE_PRIVATE_KEY)),
  });
}

/** The spend guard on the shared Redis counters (@tollgate/spend). */
export function redisSpendGuard(
  config: ProxyConfig,
  deps: { redis: RedisClient; signer: ServiceSigner; logger: Logger; metrics: ProxyMetrics },
): SpendGuard {
  const { redis, signer, logger, metrics } = deps;
  return createRedisSpendGuard({
    redis,
    prefix: config.REDIS_PREFIX,
    billingUrl: config.BILLING_URL,
    signer,
    rebuildTimeoutMs: config.SERVICE_TIMEOUT_MS,
    logger,
    onBackgroundError: (err) => logger.warn({ err }, 'spend counter refresh failed'),
    onExpiredPending: (count) => metrics.pendingHoldsExpired(count),
  });
}
