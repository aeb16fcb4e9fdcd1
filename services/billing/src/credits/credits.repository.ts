import { prepared, sql } from '@tollgate/db';
import { toUnits } from '@tollgate/money';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

type Db = Kysely<Database>;

export interface AccountSettings {
  creditsUnits: bigint;
  postpaid: boolean;
  version: number;
}

/** Credits total, postpaid flag and settings version in one statement (one snapshot). */
export async function readAccountSettings(db: Db, accountId: string): Promise<AccountSettings> {
  const { rows } = await sql<{ credits: string; postpaid: boolean; version: string }>`
    select
      coalesce((select sum(amount) from billing.credit_ledger where account_id = ${accountId}), 0)::text as credits,
      coalesce((select postpaid from billing.account_settings where account_id = ${accountId}), false) as postpaid,
      coalesce((select version from billing.account_settings where account_id = ${accountId}), 0)::text as version
  `.execute(db);
  const row = rows[0];
  return {
    creditsUnits: toUnits(row?.credits ?? '0'),
    postpaid: row?.postpaid ?? false,
    version: Number(row?.version ?? 0),
  };
}

/**
 * Credits granted and spend recorded for GET /credits, in one statement (one round trip and one pooled
 * connection instead of two queries side by side; `billing.account_usage` is this service's too),
 * prepared once per connection.
 */
export async function creditBalance(db: Db, accountId: string): Promise<{ credits: string; usage: string }> {
  const { rows } = await sql<{ credits: string; usage: string }>`${prepared('billing_credit_balance')}
    select
      coalesce((select sum(amount) from billing.credit_ledger where account_id = ${accountId}), 0)::text as credits,
      coalesce((select amount from billing.account_usage where account_id = ${accountId}), 0)::text as usage
  `.execute(db);
  return { credits: rows[0]?.credits ?? '0', usage: rows[0]?.usage ?? '0' };
}

/** Bumps the settings version (creating the row), optionally changing postpaid. Locks the row. */
export async function bumpSettings(trx: Db, accountId: string, postpaid?: boolean) {
  return trx
    .insertInto('billing.account_settings')
    .values({ account_id: accountId, postpaid: postpaid ?? false, version: 1 })
    .onConflict((oc) =>
      oc.column('account_id').doUpdateSet({
        version: sql<string>`billing.account_settings.version + 1`,
        postpaid: postpaid === undefined ? sql<boolean>`billing.account_settings.postpaid` : postpaid,
        updated_at: sql<Date>`now()`,
      }),
    )
    .returning(['postpaid', 'version'])
    .executeTakeFirstOrThrow();
}

export async function insertCredit(trx: Db, accountId: string, amount: string, note: string | null) {
  await trx.insertInto('billing.credit_ledger').values({ account_id: accountId, amount, note }).execute();
}

export async function creditTotal(db: Db, accountId: string): Promise<string> {
  const row = await db
    .selectFrom('billing.credit_ledger')
    .select(sql<string>`coalesce(sum(amount), 0)::text`.as('total'))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.total ?? '0';
}

/** The ledger of one account, newest first; keyset pagination on (created_at, id). */
export async function listLedger(db: Db, q: { accountId: string; limit: number; before?: string }) {
  let query = db
    .selectFrom('billing.credit_ledger')
    .select(['id', 'amount', 'note', 'created_at'])
    .where('account_id', '=', q.accountId);
  if (q.before) {
    // Compared in Postgres (microsecond timestamps survive; a JS Date would not keep them).
    query = query.where(
      sql<boolean>`(created_at, id) < (select p.created_at, p.id from billing.credit_ledger p where p.id = ${q.before} and p.account_id = ${q.accountId})`,
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).execute();
}
