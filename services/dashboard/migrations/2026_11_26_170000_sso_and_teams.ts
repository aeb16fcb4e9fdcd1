import { type Kysely, sql } from 'kysely';

/**
 * Issue 29: single sign-on and team members.
 * - `users.sso_subject`: the identity provider's `sub` of a user who signs in through OIDC (unique per
 *   account); such a user may have no password.
 * - role `member`: a team viewer, who sees only the keys and usage of their teams (`team_members`).
 * - `sso_logins`: one row per sign-in started, bound to the browser by a cookie (only its digest is
 *   stored): the state, nonce and PKCE verifier, used once, for a few minutes.
 * - `team_members`: which users are members of which team (`keys.teams` ids; the keys service owns
 *   the teams, the dashboard owns who belongs to them).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table dashboard.users add column sso_subject text`.execute(db);
  await sql`create unique index users_account_sso_idx on dashboard.users (account_id, sso_subject)
    where sso_subject is not null`.execute(db);
  await sql`alter table dashboard.users drop constraint if exists users_role_check`.execute(db);
  await sql`alter table dashboard.users add constraint users_role_check
    check (role in ('owner', 'viewer', 'member'))`.execute(db);
  await sql`
    create table dashboard.sso_logins (
      digest text primary key,
      state text not null,
      nonce text not null,
      code_verifier text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null
    )`.execute(db);
  await sql`create index sso_logins_expires_idx on dashboard.sso_logins (expires_at)`.execute(db);
  await sql`
    create table dashboard.team_members (
      team_id uuid not null,
      user_id uuid not null references dashboard.users (id) on delete cascade,
      account_id uuid not null,
      created_at timestamptz not null default now(),
      primary key (team_id, user_id)
    )`.execute(db);
  await sql`create index team_members_user_idx on dashboard.team_members (user_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists dashboard.team_members`.execute(db);
  await sql`drop table if exists dashboard.sso_logins`.execute(db);
  await sql`delete from dashboard.users where role = 'member'`.execute(db);
  await sql`alter table dashboard.users drop constraint if exists users_role_check`.execute(db);
  await sql`alter table dashboard.users add constraint users_role_check check (role in ('owner', 'viewer'))`.execute(
    db,
  );
  await sql`drop index if exists dashboard.users_account_sso_idx`.execute(db);
  await sql`alter table dashboard.users drop column sso_subject`.execute(db);
}
