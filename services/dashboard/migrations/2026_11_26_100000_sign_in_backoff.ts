import { type Kysely, sql } from 'kysely';

/**
 * Sign-in throttling on (email, address) with backoff (issue 23): subjects are now
 * `pair:<address>|<lowercase email>` and `ip:<address>`, each with the instant before which it may not
 * try again. The old per-email rows (`email:…`, a hard lock anyone could trigger) are dropped.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table dashboard.sign_in_failures add column blocked_until timestamptz`.execute(db);
  await sql`delete from dashboard.sign_in_failures where subject like 'email:%'`.execute(db);
  await sql`create index sign_in_failures_window on dashboard.sign_in_failures (window_started_at)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists dashboard.sign_in_failures_window`.execute(db);
  await sql`delete from dashboard.sign_in_failures where subject like 'pair:%'`.execute(db);
  await sql`alter table dashboard.sign_in_failures drop column blocked_until`.execute(db);
}
