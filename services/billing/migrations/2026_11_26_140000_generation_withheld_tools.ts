import { type Kysely, sql } from 'kysely';

/**
 * The hosted tools a request offered that were withheld from the provider (`POST /responses`:
 * `web_search`, `file_search`, …; jsonb array), null when none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations add column if not exists withheld_tools jsonb`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations drop column if exists withheld_tools`.execute(db);
}
