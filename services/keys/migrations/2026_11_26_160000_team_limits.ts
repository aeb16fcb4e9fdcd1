import { type Kysely, sql } from 'kysely';

/**
 * Team budgets (issue 29): a USD spend limit with its reset period (like a key's: null limit = none,
 * null reset = never resets) and a tokens-per-minute limit shared by the team's keys. Spend itself
 * is billing's (`billing.team_spend`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.teams
      add column if not exists "limit" numeric(20, 10) check ("limit" >= 0),
      add column if not exists limit_reset text check (limit_reset in ('daily', 'weekly', 'monthly')),
      add column if not exists rate_limit_tpm integer check (rate_limit_tpm > 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.teams
      drop column if exists "limit",
      drop column if exists limit_reset,
      drop column if exists rate_limit_tpm`.execute(db);
}
