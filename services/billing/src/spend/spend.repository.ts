import { sql } from '@tollgate/db';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

type Db = Kysely<Database>;

export interface KeySpendDelta {
  keyId: string;
  accountId: string;
  period: string;
  /** decimal USD string */
  amount: string;
}

/**
 * One multi-row upsert for every distinct (key, period) of a batch; rows sorted by the caller so
 * concurrent workers lock in the same order. Returns the totals after the increment.
 */
export async function addKeySpend(trx: Db, deltas: KeySpendDelta[]) {
  if (deltas.length === 0) return [];
  return trx
    .insertInto('billing.key_spend')
    .values(
      deltas.map((d) => ({ key_id: d.keyId, account_id: d.accountId, period: d.period, amount: d.amount })),
    )
    .onConflict((oc) =>
      oc
        .columns(['key_id', 'period'])
        .doUpdateSet({ amount: sql<string>`billing.key_spend.amount + excluded.amount` }),
    )
    .returning(['key_id', 'period', 'amount'])
    .execute();
}

export async function addAccountUsage(trx: Db, deltas: Array<{ accountId: string; amount: string }>) {
  if (deltas.length === 0) return [];
  return trx
    .insertInto('billing.account_usage')
    .values(deltas.map((d) => ({ account_id: d.accountId, amount: d.amount })))
    .onConflict((oc) =>
      oc
        .column('account_id')
        .doUpdateSet({ amount: sql<string>`billing.account_usage.amount + excluded.amount` }),
    )
    .returning(['account_id', 'amount'])
    .execute();
}

/** Totals of the given (key, period) pairs; absent pairs are simply not returned (zero). */
export async function keySpendTotals(db: Db, pairs: Array<{ keyId: string; period: string }>) {
  if (pairs.length === 0) return [];
  return db
    .selectFrom('billing.key_spend')
    .select(['key_id', 'period', 'amount'])
    .where((eb) => eb.or(pairs.map((p) => eb.and([eb('key_id', '=', p.keyId), eb('period', '=', p.period)]))))
    .execute();
}

export async function accountUsageTotals(db: Db, accountIds: string[]) {
  if (accountIds.length === 0) return [];
  return db
    .selectFrom('billing.account_usage')
    .select(['account_id', 'amount'])
    .where('account_id', 'in', accountIds)
    .execute();
}

/** Spend rows of the given keys for the given periods (current-period figures for key objects). */
export async function keySpendForPeriods(db: Db, keyIds: string[], periods: string[]) {
  if (keyIds.length === 0) return [];
  return db
    .selectFrom('billing.key_spend')
    .select(['key_id', 'period', 'amount'])
    .where('key_id', 'in', keyIds)
    .where('period', 'in', periods)
    .execute();
}

/** A key's spend in the current and any later period of each kind, plus all-time (for a rebuild). */
export async function keySpendFrom(db: Db, keyId: string, current: { d: string; w: string; m: string }) {
  return db
    .selectFrom('billing.key_spend')
    .select(['period', 'amount'])
    .where('key_id', '=', keyId)
    .where((eb) =>
      eb.or([
        eb('period', '=', 'all'),
        eb.and([eb('period', 'like', 'd%'), eb('period', '>=', current.d)]),
        eb.and([eb('period', 'like', 'w%'), eb('period', '>=', current.w)]),
        eb.and([eb('period', 'like', 'm%'), eb('period', '>=', current.m)]),
      ]),
    )
    .execute();
}

export async function accountUsage(db: Db, accountId: string): Promise<string> {
  const row = await db
    .selectFrom('billing.account_usage')
    .select('amount')
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.amount ?? '0';
}
