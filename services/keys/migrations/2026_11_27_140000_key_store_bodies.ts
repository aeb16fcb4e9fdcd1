import { type Kysely, sql } from 'kysely';

/** Opt-in bodies per key (issue 28): the prompt and answer of its requests are kept; off by default. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.api_keys
      add column if not exists store_bodies boolean not null default false`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table keys.api_keys drop column if exists store_bodies`.execute(db);
}
