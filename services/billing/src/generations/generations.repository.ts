import { type Kysely, sql } from 'kysely';
import type { Database } from '../database';
import type { NewGeneration } from './generations.table';

type Db = Kysely<Database>;

/** Multi-row insert; rows whose id is already recorded are skipped. Returns the ids inserted now. */
export async function insertGenerations(trx: Db, rows: NewGeneration[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await trx
    .insertInto('billing.generations')
    .values(rows)
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .execute();
  return inserted.map((r) => r.id);
}

export async function findGeneration(db: Db, id: string) {
  return db.selectFrom('billing.generations').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface GenerationFilters {
  model?: string;
  /** X-Title; '' means "requests without one". */
  app?: string;
  keyId?: string;
  provider?: string;
  usageSource?: 'provider' | 'estimated';
}

/**
 * One account's latest records, newest first, `limit` at a time. Keyset pagination: `before` is
 * the (created_at, id) of the last row of the previous page. Served by the (account_id, created_at)
 * index; never a range aggregate (analytics reads the roll-ups).
 */
export async function listGenerations(
  db: Db,
  q: {
    accountId: string;
    limit: number;
    /** The id of the last row of the previous page. */
    before?: string;
    filters?: GenerationFilters;
  },
) {
  const f = q.filters ?? {};
  let query = db.selectFrom('billing.generations').selectAll().where('account_id', '=', q.accountId);
  if (f.model) query = query.where('model', '=', f.model);
  if (f.app !== undefined)
    query = f.app === '' ? query.where('app', 'is', null) : query.where('app', '=', f.app);
  if (f.keyId) query = query.where('key_id', '=', f.keyId);
  if (f.provider) query = query.where('provider_name', '=', f.provider);
  if (f.usageSource) query = query.where('usage_source', '=', f.usageSource);
  if (q.before) {
    // Compared in Postgres (microsecond timestamps survive; a JS Date would not keep them).
    query = query.where(
      sql<boolean>`(created_at, id) < (select p.created_at, p.id from billing.generations p where p.id = ${q.before} and p.account_id = ${q.accountId})`,
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).execute();
}
