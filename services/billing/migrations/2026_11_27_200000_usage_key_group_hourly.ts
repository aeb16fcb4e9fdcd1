import { type Kysely, sql } from 'kysely';

/**
 * One key's traffic per UTC hour and per value of ONE other dimension (issue 28): `usage_hourly`
 * summed over the other two, one row per (account, key, dimension, hour, value), where dimension is
 * 'model', 'app' or 'provider'. An hourly chart of one key grouped by one of them reads ~720 × (its
 * values) rows for 30 days instead of every (model, app, provider) row of the key in every hour, which
 * it found among all the account's rows (~172,000 at 1M requests: 257 ms p95). One key without
 * grouping (or grouped by key) reads `usage_group_hourly`'s 'key' rows instead. Written in the same
 * statement as `usage_hourly`, from the same increments (usage.repository.ts); backfilled from it.
 */
/** Fills `usage_key_group_hourly` from `usage_hourly` (also how bench/analytics-query.ts seeds it). */
export const KEY_GROUP_HOURLY_BACKFILL = `
  insert into billing.usage_key_group_hourly
  select account_id, key_id, d.dimension, hour, d.value, sum(requests), sum(tokens_prompt),
    sum(tokens_completion), sum(tokens_cached), sum(tokens_cache_write), sum(tokens_reasoning), sum(cost),
    sum(errors)
  from billing.usage_hourly
  cross join lateral (values ('model', model), ('app', app), ('provider', provider_name)) as d(dimension, value)
  group by 1, 2, 3, 4, 5`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table billing.usage_key_group_hourly (
      account_id uuid not null,
      key_id uuid not null,
      dimension text not null check (dimension in ('model', 'app', 'provider')),
      hour timestamptz not null,
      value text not null,
      requests bigint not null,
      tokens_prompt bigint not null,
      tokens_completion bigint not null,
      tokens_cached bigint not null,
      tokens_cache_write bigint not null,
      tokens_reasoning bigint not null,
      cost numeric not null,
      errors bigint not null,
      primary key (account_id, key_id, dimension, hour, value)
    )`.execute(db);
  await sql.raw(KEY_GROUP_HOURLY_BACKFILL).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.usage_key_group_hourly`.execute(db);
}
