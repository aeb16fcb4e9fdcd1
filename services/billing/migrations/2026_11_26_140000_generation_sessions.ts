import { type Kysely, sql } from 'kysely';

/** The request log's sessions (Claude Code's and Codex's session ids): one account's, by session. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index if not exists generations_account_session_idx
    on billing.generations (account_id, session_id, created_at) where session_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists billing.generations_account_session_idx`.execute(db);
}
