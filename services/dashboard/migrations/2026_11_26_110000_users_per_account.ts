import { type Kysely, sql } from 'kysely';

/**
 * Emails are unique per account, not globally (a global index let an owner test whether an address
 * belongs to another tenant, or claim it first): the unique index becomes (account_id, lower(email)),
 * and sign-in looks emails up through a plain index. Sessions get `last_seen_at` for the idle timeout.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create unique index users_account_email_idx on dashboard.users (account_id, lower(email))`.execute(
    db,
  );
  await sql`create index users_email_lookup_idx on dashboard.users (lower(email))`.execute(db);
  await sql`drop index dashboard.users_email_idx`.execute(db);
  await sql`alter table dashboard.sessions add column last_seen_at timestamptz not null default now()`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table dashboard.sessions drop column last_seen_at`.execute(db);
  await sql`create unique index users_email_idx on dashboard.users (lower(email))`.execute(db);
  await sql`drop index dashboard.users_email_lookup_idx`.execute(db);
  await sql`drop index dashboard.users_account_email_idx`.execute(db);
}
