import { prepared } from '@tollgate/db';
import type { LimitReset } from '@tollgate/money';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../database';
import type { ApiKey, ApiKeyUpdate, NewApiKey } from './keys.table';

type Db = Kysely<Database>;

export const PAGE_SIZE = 100;

export async function insertKey(db: Db, input: NewApiKey): Promise<ApiKey> {
  return db.insertInto('keys.api_keys').values(input).returningAll().executeTakeFirstOrThrow();
}

/** Prepared once per connection: every `GET /key` and key-caller route reads its key here. */
export async function findKeyInAccount(db: Db, accountId: string, id: string): Promise<ApiKey | undefined> {
  return db
    .selectFrom('keys.api_keys')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .modifyEnd(prepared('keys_key_in_account'))
    .executeTakeFirst();
}

/** Same as findKeyInAccount, locking the row until the transaction ends (serialises changes). */
export async function lockKeyInAccount(db: Db, accountId: string, id: string): Promise<ApiKey | undefined> {
  return db
    .selectFrom('keys.api_keys')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirst();
}

export async function findKeyByDigest(db: Db, digest: string): Promise<ApiKey | undefined> {
  return db.selectFrom('keys.api_keys').selectAll().where('digest', '=', digest).executeTakeFirst();
}

/**
 * The keys of these ids that exist (any account), with their team's budget (billing's caller checks
 * and threshold alerts: `POST /internal/keys/owners`). Prepared once per connection: one id (billing's
 * check of the caller on every `GET /credits` and `/generation`) as `k.id = $1`, whose generic plan
 * Postgres keeps after five executions (an array parameter it keeps planning for its length), and
 * any other number of ids as `= any($1)`, one text for all of them.
 */
export async function findOwnersByIds(
  db: Db,
  ids: readonly string[],
): Promise<Array<ApiKey & { team_limit: string | null; team_limit_reset: LimitReset | null }>> {
  if (ids.length === 0) return [];
  const query = db
    .selectFrom('keys.api_keys as k')
    .leftJoin('keys.teams as t', 't.id', 'k.team_id')
    .selectAll('k')
    .select(['t.limit as team_limit', 't.limit_reset as team_limit_reset']);
  const [one] = ids;
  if (ids.length === 1 && one !== undefined)
    return query.where('k.id', '=', one).modifyEnd(prepared('keys_owner_by_id')).execute();
  return query
    .where(sql<boolean>`k.id = any(${[...ids]}::uuid[])`)
    .modifyEnd(prepared('keys_owners_by_ids'))
    .execute();
}

export interface ListKeysQuery {
  accountId: string;
  includeRevoked: boolean;
  scope?: ApiKey['scope'];
  offset?: number;
  limit?: number;
}

/** Newest first. */
export async function listKeys(db: Db, q: ListKeysQuery): Promise<ApiKey[]> {
  let query = db.selectFrom('keys.api_keys').selectAll().where('account_id', '=', q.accountId);
  if (!q.includeRevoked) query = query.where('revoked', '=', false);
  if (q.scope) query = query.where('scope', '=', q.scope);
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(q.offset ?? 0)
    .limit(q.limit ?? PAGE_SIZE)
    .execute();
}

/** Applies a change and bumps `version` (the cache CAS) and `updated_at`. */
export async function updateKey(db: Db, id: string, changes: ApiKeyUpdate): Promise<ApiKey> {
  return db
    .updateTable('keys.api_keys')
    .set({ ...changes, version: sql<number>`version + 1`, updated_at: sql<Date>`clock_timestamp()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** One batched UPDATE: last_used_at = greatest(existing, value). Returns the number of rows touched. */
export async function touchLastUsed(
  db: Db,
  entries: ReadonlyArray<{ id: string; at: Date }>,
): Promise<number> {
  if (entries.length === 0) return 0;
  const ids = entries.map((e) => e.id);
  const ats = entries.map((e) => e.at.toISOString());
  const result = await sql`
    update keys.api_keys k
    set last_used_at = greatest(k.last_used_at, v.at)
    from unnest(${ids}::uuid[], ${ats}::timestamptz[]) as v(id, at)
    where k.id = v.id`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
