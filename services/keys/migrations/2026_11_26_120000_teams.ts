import { type Kysely, sql } from 'kysely';

/**
 * Teams inside an account (issue 29): a name and the account's keys that belong to it (a key belongs
 * to at most one team of its own account). The composite foreign key keeps a key's team in the key's
 * account whatever the caller checked.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table if not exists keys.teams (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references keys.accounts (id),
      name text not null check (length(name) between 1 and 200),
      created_at timestamptz not null default clock_timestamp(),
      updated_at timestamptz not null default clock_timestamp(),
      constraint teams_account_id_id_key unique (account_id, id)
    )`.execute(db);
  await sql`create index if not exists teams_account_listing_idx on keys.teams (account_id, created_at, id)`.execute(
    db,
  );
  await sql`alter table keys.api_keys add column if not exists team_id uuid`.execute(db);
  await sql`
    alter table keys.api_keys
      add constraint api_keys_team_in_account foreign key (account_id, team_id)
      references keys.teams (account_id, id)`.execute(db);
  await sql`create index if not exists api_keys_team_idx on keys.api_keys (team_id) where team_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table keys.api_keys drop constraint if exists api_keys_team_in_account`.execute(db);
  await sql`alter table keys.api_keys drop column if exists team_id`.execute(db);
  await sql`drop table if exists keys.teams`.execute(db);
}
