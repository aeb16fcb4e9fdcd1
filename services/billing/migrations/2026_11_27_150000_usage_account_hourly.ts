import { type Kysely, sql } from 'kysely';

/**
 * The account's whole traffic per UTC hour (issue 28): `usage_hourly` summed over key, model, app
 * and provider, one row per (account, hour). An hourly chart of a whole account without grouping or
 * filters — the Usage page's and the errors chart's — reads 720 rows for 30 days instead of every
 * (key, model, app, provider) row of every hour (~170,000 at 1M requests). Written in the same
 * statement as `usage_hourly`, from the same increments (usage.repository.ts); backfilled from it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table billing.usage_account_hourly (
      account_id uuid not null,
      hour timestamptz not null,
      requests bigint not null,
      tokens_prompt bigint not null,
      tokens_completion bigint not null,
      tokens_cached bigint not null,
      tokens_cache_write bigint not null,
      tokens_reasoning bigint not null,
      cost numeric not null,
      errors bigint not null,
      primary key (account_id, hour)
    )`.execute(db);
  await sql`
    insert into billing.usage_account_hourly
    select account_id, hour, sum(requests), sum(tokens_prompt), sum(tokens_completion), sum(tokens_cached),
      sum(tokens_cache_write), sum(tokens_reasoning), sum(cost), sum(errors)
    from billing.usage_hourly
    group by account_id, hour`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.usage_account_hourly`.execute(db);
}
