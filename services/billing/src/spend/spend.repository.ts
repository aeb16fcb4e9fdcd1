import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Database } from '../database';

type Db = Kysely<Database>;

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

/** Periods `all`, and each kind's current one or later (rows of a key's or a team's spend). */
function currentOrLater(
  eb: ExpressionBuilder<Database, 'billing.key_spend' | 'billing.team_spend'>,
  current: { d: string; w: string; m: string },
) {
  return eb.or([
    eb('period', '=', 'all'),
    eb.and([eb('period', 'like', 'd%'), eb('period', '>=', current.d)]),
    eb.and([eb('period', 'like', 'w%'), eb('period', '>=', current.w)]),
    eb.and([eb('period', 'like', 'm%'), eb('period', '>=', current.m)]),
  ]);
}

/** A key's spend in the current and any later period of each kind, plus all-time (for a rebuild). */
export async function keySpendFrom(db: Db, keyId: string, current: { d: string; w: string; m: string }) {
  return db
    .selectFrom('billing.key_spend')
    .select(['period', 'amount'])
    .where('key_id', '=', keyId)
    .where((eb) => currentOrLater(eb, current))
    .execute();
}

/** A team's spend in the current and any later period of each kind, plus all-time (for a rebuild). */
export async function teamSpendFrom(db: Db, teamId: string, current: { d: string; w: string; m: string }) {
  return db
    .selectFrom('billing.team_spend')
    .select(['period', 'amount'])
    .where('team_id', '=', teamId)
    .where((eb) => currentOrLater(eb, current))
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
