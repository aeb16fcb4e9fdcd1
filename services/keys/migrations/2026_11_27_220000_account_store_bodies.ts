import { type Kysely, sql } from 'kysely';

/**
 * Opt-in bodies per account (issue 28): when on, every key of the account has the prompt and answer of
 * its requests kept, whatever the key's own `store_bodies` says; off by default.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.accounts
      add column if not exists store_bodies boolean not null default false`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table keys.accounts drop column if exists store_bodies`.execute(db);
}
