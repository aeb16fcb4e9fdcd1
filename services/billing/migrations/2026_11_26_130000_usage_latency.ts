import { type Kysely, sql } from 'kysely';

/**
 * Latency and errors as data in the roll-ups (additive). Per row: the sums of time to first token
 * (`latency_ms` of the records) and total time (`generation_time_ms`), a histogram of each
 * (`analytics/latency.ts`: bucket k holds values below 25·2^(k/2) ms, the last one the rest) from
 * which percentiles per model or provider are read, and the requests that ended with an upstream
 * error. `billing.hist_add` adds two histograms element-wise (an upsert's increment);
 * `billing.hist_sum` is its aggregate.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create function billing.hist_add(a bigint[], b bigint[]) returns bigint[]
    language sql immutable parallel safe as $$
      select coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) order by i), '{}')
      from unnest(a, b) with ordinality as u(x, y, i)
    $$`.execute(db);
  await sql`
    create aggregate billing.hist_sum(bigint[]) (
      sfunc = billing.hist_add, stype = bigint[], initcond = '{}', parallel = safe
    )`.execute(db);
  for (const table of ['usage_hourly', 'usage_daily']) {
    await sql`
      alter table ${sql.table(`billing.${table}`)}
        add column ttft_ms bigint not null default 0,
        add column total_ms bigint not null default 0,
        add column ttft_hist bigint[] not null default '{}',
        add column total_hist bigint[] not null default '{}',
        add column errors bigint not null default 0`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['usage_hourly', 'usage_daily']) {
    await sql`
      alter table ${sql.table(`billing.${table}`)}
        drop column ttft_ms, drop column total_ms, drop column ttft_hist, drop column total_hist,
        drop column errors`.execute(db);
  }
  await sql`drop aggregate if exists billing.hist_sum(bigint[])`.execute(db);
  await sql`drop function if exists billing.hist_add(bigint[], bigint[])`.execute(db);
}
