import { type Kysely, sql } from 'kysely';

/**
 * Latency roll-ups of their own (issue 28), and the gateway's overhead in the records.
 *
 * - `generations.gateway_overhead_us`: the time the proxy itself added to the request, in
 *   microseconds (docs/architecture.md "Gateway overhead"); null for records of events that did not
 *   carry it (proxies before it existed).
 * - `latency_hourly` / `latency_daily`: one row per (account, hour|day, key, model, provider) — the
 *   usage roll-ups' dimensions without `app`, so 30 days of one account are a few thousand rows —
 *   with requests, upstream errors, completion tokens, the sums of time to first token, total time,
 *   generating time (`gen_ms`, tokens per second's denominator) and overhead, and three histograms as plain bigint columns (`ttft_b00` … `ttft_b24`, `total_b…`,
 *   `overhead_b…`; bucket k counts values below 25·2^(k/2) units — ms for the first two, µs for the
 *   overhead — and bucket 24 the rest). A percentile per model or provider is one `sum()` per
 *   bucket column over those rows; the arrays this replaces were unnested per row (p95 506 ms over
 *   1M records, bench/README.md).
 * - The latency columns of `usage_hourly` / `usage_daily` are copied into the new tables and
 *   dropped (the usage rows are narrower again; `errors` stays, the errors chart's per-app view).
 */
const BUCKETS = 25;
const HISTS = ['ttft', 'total', 'overhead'] as const;
const bucketColumns = (hist: string) =>
  Array.from({ length: BUCKETS }, (_, k) => `${hist}_b${String(k).padStart(2, '0')}`);

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations add column gateway_overhead_us bigint`.execute(db);
  const histDefs = HISTS.flatMap(bucketColumns)
    .map((c) => `${c} bigint not null default 0`)
    .join(',\n      ');
  for (const [table, unit, from] of [
    ['latency_hourly', 'hour timestamptz', 'usage_hourly'],
    ['latency_daily', 'day date', 'usage_daily'],
  ] as const) {
    const column = unit.split(' ')[0] as string;
    await sql`
      create table ${sql.table(`billing.${table}`)} (
        account_id uuid not null,
        ${sql.raw(unit)} not null,
        key_id uuid not null,
        model text not null,
        provider_name text not null,
        requests bigint not null default 0,
        errors bigint not null default 0,
        tokens_completion bigint not null default 0,
        ttft_ms bigint not null default 0,
        total_ms bigint not null default 0,
        gen_ms bigint not null default 0,
        overhead_us bigint not null default 0,
        overhead_n bigint not null default 0,
        ${sql.raw(histDefs)},
        primary key (account_id, ${sql.ref(column)}, key_id, model, provider_name)
      )`.execute(db);
    // The arrays' element k+1 is bucket k (an empty array: rows written before the histograms).
    const copied = HISTS.slice(0, 2).flatMap((h) =>
      bucketColumns(h).map((_, k) => `coalesce(sum(${h}_hist[${k + 1}]), 0)`),
    );
    await sql`
      insert into ${sql.table(`billing.${table}`)} (account_id, ${sql.ref(column)}, key_id, model,
        provider_name, requests, errors, tokens_completion, ttft_ms, total_ms, gen_ms,
        ${sql.raw([...bucketColumns('ttft'), ...bucketColumns('total')].join(', '))})
      select account_id, ${sql.ref(column)}, key_id, model, provider_name, sum(requests), sum(errors),
        sum(tokens_completion), sum(ttft_ms), sum(total_ms), sum(total_ms) - sum(ttft_ms), ${sql.raw(copied.join(', '))}
      from ${sql.table(`billing.${from}`)}
      group by account_id, ${sql.ref(column)}, key_id, model, provider_name`.execute(db);
    await sql`
      alter table ${sql.table(`billing.${from}`)}
        drop column ttft_ms, drop column total_ms, drop column ttft_hist, drop column total_hist`.execute(db);
  }
  await sql`drop aggregate if exists billing.hist_sum(bigint[])`.execute(db);
  await sql`drop function if exists billing.hist_add(bigint[], bigint[])`.execute(db);
}

/** Back to the arrays in the usage roll-ups (their latency restarts empty: the per-app split is gone). */
export async function down(db: Kysely<unknown>): Promise<void> {
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
        add column total_hist bigint[] not null default '{}'`.execute(db);
  }
  await sql`drop table if exists billing.latency_daily`.execute(db);
  await sql`drop table if exists billing.latency_hourly`.execute(db);
  await sql`alter table billing.generations drop column if exists gateway_overhead_us`.execute(db);
}
