import { AppError } from '@tollgate/errors';
import type { CachedKey, KeyCache } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { RedisClient } from '@tollgate/redis';
import type { KeysDb } from '../database';
import type { ApiKey } from '../keys/keys.table';
import { findTeamLimits, type TeamLimits } from '../teams/teams.repository';

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
export function toCachedKey(row: ApiKey, team?: TeamLimits | null): CachedKey {
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
    ...(row.store_bodies ? { storeBodies: true } : {}),
    teamId: row.team_id,
    ...(row.team_id !== null && team
      ? {
          teamLimit: team.limit === null ? null : normaliseDecimal(team.limit),
          teamLimitReset: team.limit_reset,
          teamRateLimitTpm: team.rate_limit_tpm,
        }
      : {}),
    version: row.version,
  };
}

/** The budget of the key's team as the record carries it (read in the caller's transaction), or null. */
export async function teamOf(db: KeysDb, row: ApiKey): Promise<TeamLimits | null> {
  return row.team_id === null ? null : ((await findTeamLimits(db, row.team_id)) ?? null);
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
  let team: TeamLimits | null = null;
  try {
    result = await db.transaction().execute(async (trx) => {
      const r = await change(trx);
      if (r.changed) {
        team = await teamOf(trx, r.row);
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
      await cache.commit(result.row.digest, toCachedKey(result.row, team));
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

/**
 * A change of a team's budget (issue 29) reaches the records of all its keys: in the team's
 * transaction `change` bumps the version of every key of the team (returned), each is marked pending
 * before commit (a reader asks the keys service meanwhile; Redis refusing = 503, nothing changed)
 * and after commit gets its new record with the team's new budget, exactly as `applyKeyChange`.
 */
export async function applyTeamChange(
  deps: KeyChangeDeps,
  change: (trx: KeysDb) => Promise<{ team: TeamLimits; keys: ApiKey[] }>,
): Promise<void> {
  const { db, cache, logger } = deps;
  const pending: Array<{ digest: string; version: number }> = [];
  let result: { team: TeamLimits; keys: ApiKey[] };
  try {
    result = await db.transaction().execute(async (trx) => {
      const r = await change(trx);
      for (const k of r.keys) {
        pending.push({ digest: k.digest, version: k.version });
        await markPending(deps, k.digest, k.version);
      }
      return r;
    });
  } catch (err) {
    for (const { digest, version } of pending) {
      await cache.clearPending(digest, version).catch((e: unknown) => {
        logger.warn({ err: e, keyDigestPrefix: digest.slice(0, 8) }, 'could not clear pending cache marker');
      });
    }
    throw err;
  }
  for (const row of result.keys) {
    try {
      await cache.commit(row.digest, toCachedKey(row, result.team));
    } catch (err) {
      logger.warn({ err, keyId: row.id }, 'key cache commit failed after the team change committed');
    }
  }
}
