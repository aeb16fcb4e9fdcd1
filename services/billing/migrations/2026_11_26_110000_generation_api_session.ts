import { type Kysely, sql } from 'kysely';

/**
 * The front door a generation came in by (`api_type`: chat, messages, …; null for records written
 * before it existed, which were all chat), the client's session id (Claude Code's
 * `X-Claude-Code-Session-Id`) and the caller's end-user id (Anthropic `metadata.user_id`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations
    add column if not exists api_type text,
    add column if not exists session_id text,
    add column if not exists end_user text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations
    drop column if exists api_type,
    drop column if exists session_id,
    drop column if exists end_user`.execute(db);
}
