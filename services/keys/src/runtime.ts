import { createKeyCache, type KeyCache } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import { createRedisClient, type RedisClient } from '@tollgate/redis';
import { type AccountService, createAccountService } from './accounts/accounts.service';
import type { KeysConfig } from './config';
import { createKeysDb, type KeysDb, migrateKeysDb } from './database';
import { createKeyPresenter, type KeyPresenter } from './keys/key-view';
import { createKeyService, type KeyService } from './keys/keys.service';
import { createLastUsedStore, type LastUsedStore } from './last-used/last-used.store';
import { createTeamService, type TeamService } from './teams/teams.service';
import { createUsageReader, type UsageReader } from './usage/usage-reader';

/** Everything the HTTP service and the admin CLI share: connections and the use cases built on them. */
export interface KeysRuntime {
  config: KeysConfig;
  logger: Logger;
  db: KeysDb;
  redis: RedisClient;
  cache: KeyCache;
  lastUsed: LastUsedStore;
  usage: UsageReader;
  keys: KeyService;
  accounts: AccountService;
  presenter: KeyPresenter;
  teams: TeamService;
  close(): Promise<void>;
}

export interface KeysRuntimeOptions {
  logger: Logger;
  /** Replaces the billing-backed reader (tests). */
  usage?: UsageReader;
  /** Wraps the key cache (tests inject faults). */
  wrapCache?: (cache: KeyCache) => KeyCache;
}

/**
 * Redis commands fail fast when the server is unreachable (no offline queue): a key change must be
 * refused with 503 at once, not hang until Redis comes back.
 */
function createKeysRedis(config: KeysConfig, logger: Logger): RedisClient {
  const redis = createRedisClient(
    { url: config.REDIS_URL, clusterNodes: config.REDIS_CLUSTER_NODES },
    {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 2000,
      // A cluster's planned failover holds a master's writes until its replica has taken over
      // (docs/operations.md "Redis Cluster failover"): a key change waits for it.
      clusterCommandTimeout: 3000,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    },
  );
  let lastLog = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      logger.warn({ err: err.message }, 'redis error');
    }
  });
  return redis;
}

/** Connects, migrates the `keys` schema (idempotent) and builds the use cases. */
export async function createKeysRuntime(
  config: KeysConfig,
  options: KeysRuntimeOptions,
): Promise<KeysRuntime> {
  const { logger } = options;
  const db = createKeysDb(config.DATABASE_URL);
  const redis = createKeysRedis(config, logger);
  try {
    await migrateKeysDb(db);
    await redis.connect().catch((err: unknown) => {
      // Reads and resolves still work; key changes answer 503 until Redis is back.
      logger.warn({ err }, 'redis unreachable at start; retrying in the background');
    });
  } catch (err) {
    redis.disconnect();
    await db.destroy();
    throw err;
  }
  const baseCache = createKeyCache(redis, { prefix: config.REDIS_PREFIX });
  const cache = options.wrapCache ? options.wrapCache(baseCache) : baseCache;
  const lastUsed = createLastUsedStore(redis, config.REDIS_PREFIX);
  const usage = options.usage ?? createUsageReader(config, logger, redis);
  const keys = createKeyService({ db, cache, redis, logger });
  return {
    config,
    logger,
    db,
    redis,
    cache,
    lastUsed,
    usage,
    keys,
    teams: createTeamService({ db, cache, redis, logger }),
    accounts: createAccountService({ db, cache, redis, logger }),
    presenter: createKeyPresenter({ usage, lastUsed, logger }),
    async close() {
      await usage.close();
      await redis.quit().catch(() => redis.disconnect());
      await db.destroy();
    },
  };
}
