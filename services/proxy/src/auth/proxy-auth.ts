import { clientAddressResolver } from '@tollgate/http';
import { createKeyCache, lastUsedHashKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import { isCluster, type RedisClient } from '@tollgate/redis';
import type { ProxyConfig } from '../config';
import type { SpendGuard } from '../spend/guard';
import { type Authenticator, createAuthenticator } from './authenticate';
import type { KeyResolver } from './key-resolver';
import { type AuthSteps, authSteps } from './steps';
import { UnknownKeyLimiter } from './unknown-keys';

/**
 * The proxy's authentication, built once from its config (http/app.ts): the key cache on Redis, the
 * keys service behind it (`resolver`), the unknown-key limiter, and the steps the routes and the
 * front doors mount. Records are recalled when admission can check them (`guard.checks`); not on a
 * Redis Cluster (docs/architecture.md).
 */
export function proxyAuthentication(
  config: ProxyConfig,
  deps: { redis: RedisClient; resolver: KeyResolver; logger: Logger; guard: SpendGuard },
): { authenticator: Authenticator; steps: AuthSteps } {
  const { redis, logger } = deps;
  const keyCache = createKeyCache(redis, { prefix: config.REDIS_PREFIX });
  const authenticator = createAuthenticator({
    keyCache,
    resolver: deps.resolver,
    redis,
    lastUsedKey: (keyId) => lastUsedHashKey(config.REDIS_PREFIX, keyId),
    logger,
    unknownKeys: new UnknownKeyLimiter({
      perMinute: config.UNKNOWN_KEY_LOOKUPS_PER_MINUTE,
      perSecond: config.UNKNOWN_KEY_LOOKUPS_PER_SECOND,
      burst: config.UNKNOWN_KEY_LOOKUP_BURST,
    }),
  });
  const steps = authSteps(authenticator, keyCache, {
    recall: deps.guard.checks === true && !isCluster(redis),
    clientAddress: clientAddressResolver(config.TRUSTED_PROXIES),
  });
  return { authenticator, steps };
}
