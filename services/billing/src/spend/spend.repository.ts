import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Database } from '../database';

type Db = Kysely<Database>;

/** Spend rows of the given keys or teams for the given periods (current-period figures). */
export async function spendForPeriods(
  db: Db,
  owner: 'key' | 'team',
  ids: string[],
  periods: string[],
): Promise<Array<{ id: string; period: string; amount: string }>> {
  if (ids.length === 0) return [];
  if (owner === 'team')
    return db
      .selectFrom('billing.team_spend')
      .select(['team_id as id', 'period', 'amount'])
      .where('team_id', 'in', ids)
      .where('period', 'in', periods)
      .execute();
  return db
    .selectFrom('billing.key_spend')
    .select(['key_id as id', 'period', 'amount'])
    .where('key_id', 'in', ids)
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
