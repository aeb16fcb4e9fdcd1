import { type Kysely, sql } from 'kysely';

/** A tokens-per-minute limit per key (issue 29), beside `rate_limit_rpm`; null = none. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.api_keys
      add column if not exists rate_limit_tpm integer check (rate_limit_tpm > 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table keys.api_keys drop column if exists rate_limit_tpm`.execute(db);
}
