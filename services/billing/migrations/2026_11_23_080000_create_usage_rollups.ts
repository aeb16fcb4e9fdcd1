import { type Kysely, sql } from 'kysely';

/**
 * Usage roll-ups for analytics, hourly and daily (UTC): one row per (account, hour, key, model, app, provider) with
 * request and token counts and the exact cost. Written in the same transaction as the generation
 * records (only for newly inserted ones), so analytics is exactly-once like billing itself. `app` is
 * the X-Title, '' when the request had none (a primary key column cannot be null). The primary key
 * leads with (account_id, hour): every analytics query is a range scan of one account's hours.
 * The daily table holds the same sums per UTC day (24× fewer rows), so day and whole-range queries
 * over a month read a few thousand rows instead of a few hundred thousand.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table billing.usage_hourly (
      account_id uuid not null,
      hour timestamptz not null,
      key_id uuid not null,
      model text not null,
      app text not null,
      provider_name text not null,
      requests bigint not null,
      tokens_prompt bigint not null,
      tokens_completion bigint not null,
      tokens_cached bigint not null,
      tokens_cache_write bigint not null,
      tokens_reasoning bigint not null,
      cost numeric not null,
      primary key (account_id, hour, key_id, model, app, provider_name)
    )`.execute(db);
  await sql`
    create table billing.usage_daily (
      account_id uuid not null,
      day date not null,
      key_id uuid not null,
      model text not null,
      app text not null,
      provider_name text not null,
      requests bigint not null,
      tokens_prompt bigint not null,
      tokens_completion bigint not null,
      tokens_cached bigint not null,
      tokens_cache_write bigint not null,
      tokens_reasoning bigint not null,
      cost numeric not null,
      primary key (account_id, day, key_id, model, app, provider_name)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.usage_daily`.execute(db);
  await sql`drop table if exists billing.usage_hourly`.execute(db);
}
