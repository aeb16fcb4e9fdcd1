import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table keys.accounts (
      id uuid primary key default gen_random_uuid(),
      slug text not null unique check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and length(slug) <= 64),
      name text not null check (length(name) between 1 and 200),
      created_at timestamptz not null default clock_timestamp()
    )`.execute(db);
  await sql`
    create table keys.api_keys (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null references keys.accounts (id),
      name text not null check (length(name) between 1 and 200),
      label text not null,
      scope text not null check (scope in ('inference', 'management')),
      digest text not null unique check (digest ~ '^[0-9a-f]{64}$'),
      "limit" numeric(20, 10) check ("limit" >= 0),
      limit_reset text check (limit_reset in ('daily', 'weekly', 'monthly')),
      disabled boolean not null default false,
      revoked boolean not null default false,
      version integer not null default 1,
      last_used_at timestamptz,
      created_at timestamptz not null default clock_timestamp(),
      updated_at timestamptz not null default clock_timestamp(),
      constraint api_keys_revoked_is_disabled check (not revoked or disabled),
      constraint api_keys_management_has_no_limit
        check (scope = 'inference' or ("limit" is null and limit_reset is null))
    )`.execute(db);
  await sql`create index api_keys_account_listing_idx on keys.api_keys (account_id, created_at desc, id desc)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table keys.api_keys`.execute(db);
  await sql`drop table keys.accounts`.execute(db);
}
