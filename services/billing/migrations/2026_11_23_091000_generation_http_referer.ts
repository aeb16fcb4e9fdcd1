import { type Kysely, sql } from 'kysely';

/** The HTTP-Referer header of the request, recorded with the generation (null when not sent). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations add column if not exists http_referer text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations drop column if exists http_referer`.execute(db);
}
