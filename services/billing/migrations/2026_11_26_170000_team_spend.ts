import { type Kysely, sql } from 'kysely';

/**
 * Spend per team per period (issue 29), the truth behind the team's Redis spend hash: written by the
 * usage worker in the batch's transaction from the events' `team_id` (like `key_spend`), read by the
 * rebuild, `/activity` and the analytics. Periods as `key_spend`: `d2026-11-20`, `w2026-W47`,
 * `m2026-11`, `all`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table if not exists billing.team_spend (
      team_id uuid not null,
      account_id uuid not null,
      period text not null,
      amount numeric not null default 0,
      primary key (team_id, period)
    )`.execute(db);
  await sql`create index if not exists team_spend_account_idx on billing.team_spend (account_id, period)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.team_spend`.execute(db);
}
