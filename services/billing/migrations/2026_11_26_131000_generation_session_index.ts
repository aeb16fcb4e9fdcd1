import { type Kysely, sql } from 'kysely';

/**
 * One client session's records (the request log's `session_id` filter) without scanning the
 * account's other rows: only records that carry a session are indexed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index if not exists generations_account_session
    on billing.generations (account_id, session_id, created_at desc, id desc)
    where session_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists billing.generations_account_session`.execute(db);
}
