import { type Kysely, sql } from 'kysely';

/**
 * The dashboard schema: users (of an account, owner or viewer), server-side sessions (only a digest
 * of the cookie value is stored), invitations (one-time sign-in links, digest only) and the
 * failed-sign-in throttle.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table dashboard.users (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null,
      email text not null,
      display_name text not null,
      role text not null check (role in ('owner', 'viewer')),
      password_hash text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create unique index users_email_idx on dashboard.users (lower(email))`.execute(db);
  await sql`create index users_account_idx on dashboard.users (account_id, created_at)`.execute(db);
  await sql`
    create table dashboard.sessions (
      digest text primary key,
      user_id uuid not null references dashboard.users (id) on delete cascade,
      csrf_token text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null
    )`.execute(db);
  await sql`create index sessions_user_idx on dashboard.sessions (user_id)`.execute(db);
  await sql`create index sessions_expires_idx on dashboard.sessions (expires_at)`.execute(db);
  await sql`
    create table dashboard.invites (
      digest text primary key,
      user_id uuid not null references dashboard.users (id) on delete cascade,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      used_at timestamptz
    )`.execute(db);
  await sql`
    create table dashboard.sign_in_failures (
      subject text primary key,
      failures integer not null,
      window_started_at timestamptz not null
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['sign_in_failures', 'invites', 'sessions', 'users']) {
    await sql`drop table if exists ${sql.table(`dashboard.${t}`)}`.execute(db);
  }
}
