import { AppError } from '@tollgate/errors';
import type { CachedKey, KeyCache } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { RedisClient } from '@tollgate/redis';
import type { KeysDb } from '../database';
import type { ApiKey } from '../keys/keys.table';

/**
 * How a key change reaches the Redis key cache (the proxy reads it on every request):
 *
 *   1. open a transaction, apply the change (row locked, `version` bumped)
 *   2. markPending(digest, newVersion) BEFORE commit: every reader now bypasses the cache and asks
 *      the keys service; every fill carrying an older version is refused (Lua CAS). If Redis
 *      refuses or is down, the transaction rolls back and the caller gets 503: nothing changed.
 *   3. commit the transaction
 *   4. commit(digest, record): the new record, visible to the very next lookup. If this write fails
 *      the pending marker stays (30 s TTL) and readers keep asking the keys service, which reads
 *      the committed row; so a stale record can never be served.
 *   On rollback after step 2: clearPending(digest, newVersion).
 */
export function toCachedKey(row: ApiKey): CachedKey {
  return {
    id: row.id,
    accountId: row.account_id,
    scope: row.scope,
    disabled: row.disabled || row.revoked,
    revoked: row.revoked,
    limit: row.limit === null ? null : normaliseDecimal(row.limit),
    limitReset: row.limit_reset,
    expiresAt: row.expires_at === null ? null : row.expires_at.getTime(),
    allowedModels: row.allowed_models,
    rateLimitRpm: row.rate_limit_rpm,
    rateLimitTpm: row.rate_limit_tpm,
    teamId: row.team_id,
    version: row.version,
  };
}

/** Postgres numeric text ("10.5000000000") to a plain decimal string ("10.5"). */
function normaliseDecimal(value: string): string {
  if (!value.includes('.')) return value;
  return value.replace(/0+$/, '').replace(/\.$/, '');
}

export interface KeyChangeResult {
  row: ApiKey;
  /** false: nothing changed (no version bump), the cache is left alone. */
  changed: boolean;
}

export interface KeyChangeDeps {
  db: KeysDb;
  cache: KeyCache;
  redis: RedisClient;
  logger: Logger;
}

const cacheUnavailable = () =>
  new AppError(
    'service_unavailable',
    'The key cache is unavailable, so the change was not applied; retry later',
  );

export async function applyKeyChange(
  deps: KeyChangeDeps,
  change: (trx: KeysDb) => Promise<KeyChangeResult>,
): Promise<KeyChangeResult> {
  const { db, cache, logger } = deps;
  let pending: { digest: string; version: number } | undefined;
  let result: KeyChangeResult;
  try {
    result = await db.transaction().execute(async (trx) => {
      const r = await change(trx);
      if (r.changed) {
        // Set first: a write whose reply was lost may still have marked the entry.
        pending = { digest: r.row.digest, version: r.row.version };
        await markPending(deps, r.row.digest, r.row.version);
      }
      return r;
    });
  } catch (err) {
    if (pending) {
      const { digest, version } = pending;
      await cache.clearPending(digest, version).catch((e: unknown) => {
        logger.warn({ err: e, keyDigestPrefix: digest.slice(0, 8) }, 'could not clear pending cache marker');
      });
    }
    throw err;
  }
  if (result.changed) {
    try {
      await cache.commit(result.row.digest, toCachedKey(result.row));
    } catch (err) {
      // The pending marker stays until its TTL: readers go to the keys service, which reads Postgres.
      logger.warn({ err, keyId: result.row.id }, 'key cache commit failed after the change committed');
    }
  }
  return result;
}

async function markPending(deps: KeyChangeDeps, digest: string, version: number): Promise<void> {
  const { cache, redis } = deps;
  try {
    if (await cache.markPending(digest, version)) return;
    // A cached entry claims a newer version than Postgres has (e.g. a restored database): it is
    // garbage, drop it and mark again.
    await redis.del(cache.redisKey(digest));
    if (await cache.markPending(digest, version)) return;
  } catch (err) {
    deps.logger.warn({ err }, 'key cache unavailable: refusing the key change');
  }
  throw cacheUnavailable();
}
