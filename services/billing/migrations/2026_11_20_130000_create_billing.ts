import { type Kysely, sql } from 'kysely';

/**
 * The billing schema. Money is `numeric` (exact); token counts are bigint so no event can overflow
 * a column and turn into a poison message.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table billing.generations (
      id text primary key,
      account_id uuid not null,
      key_id uuid not null,
      model text not null,
      provider_name text not null,
      upstream_model text not null,
      upstream_id text,
      app text,
      streamed boolean not null,
      cancelled boolean not null,
      finish_reason text,
      tokens_prompt bigint not null,
      tokens_completion bigint not null,
      tokens_cached bigint not null,
      tokens_cache_write bigint not null,
      tokens_reasoning bigint not null,
      total_cost numeric not null,
      is_byok boolean not null,
      usage_source text not null,
      latency_ms bigint not null,
      generation_time_ms bigint not null,
      error jsonb,
      created_at timestamptz not null,
      finished_at timestamptz not null,
      recorded_at timestamptz not null default clock_timestamp()
    )`.execute(db);
  await sql`create index generations_account_created_idx on billing.generations (account_id, created_at desc)`.execute(
    db,
  );
  await sql`create index generations_key_created_idx on billing.generations (key_id, created_at desc)`.execute(
    db,
  );
  await sql`
    create table billing.key_spend (
      key_id uuid not null,
      account_id uuid not null,
      period text not null,
      amount numeric not null default 0,
      primary key (key_id, period)
    )`.execute(db);
  await sql`
    create table billing.account_usage (
      account_id uuid primary key,
      amount numeric not null default 0
    )`.execute(db);
  await sql`
    create table billing.credit_ledger (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null,
      amount numeric not null,
      note text,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index credit_ledger_account_idx on billing.credit_ledger (account_id, created_at)`.execute(
    db,
  );
  await sql`
    create table billing.account_settings (
      account_id uuid primary key,
      postpaid boolean not null default false,
      version bigint not null default 0,
      updated_at timestamptz not null default now()
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['account_settings', 'credit_ledger', 'account_usage', 'key_spend', 'generations']) {
    await sql`drop table if exists ${sql.table(`billing.${t}`)}`.execute(db);
  }
}
