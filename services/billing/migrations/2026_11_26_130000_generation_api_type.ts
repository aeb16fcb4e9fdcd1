import { type Kysely, sql } from 'kysely';

/**
 * The API a generation came in by: the proxy's front door (`chat`, `messages`, `responses`,
 * `embeddings`; the usage event's `api_type`). Records made before it existed were chat completions.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations add column if not exists api_type text not null default 'chat'`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations drop column if exists api_type`.execute(db);
}
