import { type Kysely, sql } from 'kysely';

/**
 * The API a generation came in by, as OpenRouter names it: `completions` (chat, Messages, Responses)
 * or `embeddings`. Existing rows are completions.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations add column if not exists api_type text not null default 'completions'`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations drop column if exists api_type`.execute(db);
}
