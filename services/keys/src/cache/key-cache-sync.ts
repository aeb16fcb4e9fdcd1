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
/**
 * What a key's record carries besides its own row: its team's budget (issue 29) and its account's
 * opt-in bodies switch (issue 28). Read after the key row, in the same transaction or after it: a team
 * or account change bumps the key's version, so a fill with an older context is refused by the CAS.
 */
export interface RecordContext {
  team: TeamLimits | null;
  /** The account keeps the bodies of every key's requests (`keys.accounts.store_bodies`). */
  accountStoreBodies: boolean;
}

export function toCachedKey(row: ApiKey, context?: RecordContext): CachedKey {
  const team = context?.team;
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
    // The key's own switch or its account's: one flag, so the proxy decides with the record it has.
    ...(row.store_bodies || context?.accountStoreBodies ? { storeBodies: true } : {}),
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

/** The key's record context (read in the caller's transaction): its team's budget, its account's switch. */
export async function contextOf(db: KeysDb, row: ApiKey): Promise<RecordContext> {
  const team = row.team_id === null ? null : ((await findTeamLimits(db, row.team_id)) ?? null);
  return { team, accountStoreBodies: await accountStoresBodies(db, row.account_id) };
}

async function accountStoresBodies(db: KeysDb, accountId: string): Promise<boolean> {
  const a = await db
    .selectFrom('keys.accounts')
    .select('store_bodies')
    .where('id', '=', accountId)
    .executeTakeFirst();
  return a?.store_bodies ?? false;
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
  let context: RecordContext | undefined;
  try {
    result = await db.transaction().execute(async (trx) => {
      const r = await change(trx);
      if (r.changed) {
        context = await contextOf(trx, r.row);
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
      await cache.commit(result.row.digest, toCachedKey(result.row, context));
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
 * A change that reaches the records of many keys: a team's budget (issue 29, every key of the team) or
 * an account's setting (issue 28, every key of the account). In one transaction `change` bumps the
 * version of each key concerned (returned); each is marked pending before commit (a reader asks the
 * keys service meanwhile; Redis refusing = 503, nothing changed) and after commit gets its new record,
 * exactly as `applyKeyChange`. Answers what `change` did.
 */
export async function applyKeysChange<T>(
  deps: KeyChangeDeps,
  change: (trx: KeysDb) => Promise<{ result: T; keys: ApiKey[] }>,
): Promise<T> {
  const { db, cache, logger } = deps;
  const pending: Array<{ digest: string; version: number }> = [];
  let done: { result: T; records: Array<{ digest: string; id: string; record: CachedKey }> };
  try {
    done = await db.transaction().execute(async (trx) => {
      const r = await change(trx);
      const records: Array<{ digest: string; id: string; record: CachedKey }> = [];
      const teams = new Map<string, TeamLimits | null>();
      const accounts = new Map<string, boolean>();
      for (const k of r.keys) {
        pending.push({ digest: k.digest, version: k.version });
        await markPending(deps, k.digest, k.version);
        if (k.team_id !== null && !teams.has(k.team_id))
          teams.set(k.team_id, (await findTeamLimits(trx, k.team_id)) ?? null);
        if (!accounts.has(k.account_id))
          accounts.set(k.account_id, await accountStoresBodies(trx, k.account_id));
        const context = {
          team: k.team_id === null ? null : (teams.get(k.team_id) ?? null),
          accountStoreBodies: accounts.get(k.account_id) ?? false,
        };
        records.push({ digest: k.digest, id: k.id, record: toCachedKey(k, context) });
      }
      return { result: r.result, records };
    });
  } catch (err) {
    for (const { digest, version } of pending) {
      await cache.clearPending(digest, version).catch((e: unknown) => {
        logger.warn({ err: e, keyDigestPrefix: digest.slice(0, 8) }, 'could not clear pending cache marker');
      });
    }
    throw err;
  }
  for (const { digest, id, record } of done.records) {
    try {
      await cache.commit(digest, record);
    } catch (err) {
      logger.warn({ err, keyId: id }, 'key cache commit failed after the change committed');
    }
  }
  return done.result;
}
