import { sql } from 'kysely';
import type { BillingDb } from '../database';

type Granularity = 'hour' | 'day' | 'total';
type GroupBy = 'model' | 'app' | 'key' | 'provider' | 'none';

export interface UsageQuery {
  accountId: string;
  /** Inclusive, on an hour boundary. */
  from: Date;
  /** Exclusive, on an hour boundary. */
  to: Date;
  granularity: Granularity;
  groupBy: GroupBy;
  filters?: { keyId?: string; model?: string; app?: string; provider?: string };
}

export interface UsageRow {
  bucket: Date | null;
  group: string | null;
  requests: string;
  tokens_prompt: string;
  tokens_completion: string;
  tokens_cached: string;
  tokens_cache_write: string;
  tokens_reasoning: string;
  cost: string;
}

const GROUP_COLUMN = {
  model: sql.ref('model'),
  app: sql.ref('app'),
  key: sql.ref('key_id'),
  provider: sql.ref('provider_name'),
  none: sql`null::text`,
} as const;

const DAY_MS = 86_400_000;
const isDay = (d: Date) => d.getTime() % DAY_MS === 0;

/** The table, time column and bounds a query reads (daily roll-ups for whole days). */
function source(q: UsageQuery) {
  const daily = q.granularity === 'day' || (q.granularity === 'total' && isDay(q.from) && isDay(q.to));
  return {
    daily,
    table: daily ? sql`billing.usage_daily` : sql`billing.usage_hourly`,
    time: daily ? sql.ref('day') : sql.ref('hour'),
    lower: daily ? sql`${q.from.toISOString().slice(0, 10)}::date` : sql`${q.from}::timestamptz`,
    upper: daily ? sql`${q.to.toISOString().slice(0, 10)}::date` : sql`${q.to}::timestamptz`,
  };
}

function filtersOf(q: UsageQuery) {
  const f = q.filters ?? {};
  return sql`${f.keyId ? sql`and key_id = ${f.keyId}` : sql``}
      ${f.model ? sql`and model = ${f.model}` : sql``}
      ${f.app !== undefined ? sql`and app = ${f.app}` : sql``}
      ${f.provider ? sql`and provider_name = ${f.provider}` : sql``}`;
}

/**
 * Sums one account's roll-ups over [from, to): a range scan of a roll-up table's primary key
 * (account_id, hour|day, …). Hourly buckets read `usage_hourly`; daily buckets, and totals over whole
 * UTC days, read `usage_daily` (the caller aligns day queries to whole days). Never touches
 * billing.generations.
 */
export async function queryUsage(
  db: BillingDb,
  q: UsageQuery & { rank?: { limit: number; offset: number } },
): Promise<{ rows: UsageRow[]; more: boolean }> {
  const { daily, table, time, lower, upper } = source(q);
  const bucket =
    q.granularity === 'total'
      ? sql`null::timestamptz`
      : daily
        ? sql`(day::timestamp at time zone 'UTC')`
        : sql`hour`;
  const group = GROUP_COLUMN[q.groupBy];
  const base = sql`
    select ${bucket} as bucket, ${group}::text as "group",
      sum(requests) as requests, sum(tokens_prompt) as tokens_prompt,
      sum(tokens_completion) as tokens_completion, sum(tokens_cached) as tokens_cached,
      sum(tokens_cache_write) as tokens_cache_write, sum(tokens_reasoning) as tokens_reasoning,
      sum(cost) as cost
    from ${table}
    where account_id = ${q.accountId} and ${time} >= ${lower} and ${time} < ${upper}
      ${filtersOf(q)}
    group by 1, 2`;
  // Grouped and bounded: the groups ranked by cost over the whole range, in the same statement (one
  // scan of the roll-ups), `limit` of them from `offset`; `ranked` says whether more remain.
  const rank = q.rank ?? { limit: 1_000_000, offset: 0 };
  const { rows } = await sql<UsageRow & { ranked: number }>`
    with base as (${base}), ranked as (
      select "group", row_number() over (order by sum(cost) desc, sum(requests) desc, "group") as rn
      from base group by "group"
      order by rn limit ${rank.limit + 1} offset ${rank.offset}
    )
    select b.bucket, b."group", b.requests::text, b.tokens_prompt::text, b.tokens_completion::text,
      b.tokens_cached::text, b.tokens_cache_write::text, b.tokens_reasoning::text, b.cost::text,
      (select count(*) from ranked)::int as ranked
    from base b
    where exists (
      select 1 from ranked r where r.rn <= ${rank.offset + rank.limit} and r."group" is not distinct from b."group")
    order by 1 nulls first, b.cost desc, 2`.execute(db);
  return { rows, more: (rows[0]?.ranked ?? 0) > rank.limit };
}

export interface ActivityRow {
  /** Only with `byKey` (group by team, issue 29): the key the row sums. */
  key_id?: string;
  date: string;
  model: string;
  provider_name: string;
  requests: string;
  tokens_prompt: string;
  tokens_completion: string;
  tokens_reasoning: string;
  cost: string;
}

/** Daily usage per model and provider over [from, to) (whole UTC days, daily roll-ups), newest day first. */
export async function queryActivity(
  db: BillingDb,
  q: { accountId: string; from: Date; to: Date; keyId?: string; byKey?: boolean },
): Promise<ActivityRow[]> {
  const { rows } = await sql<ActivityRow>`
    select day::text as date,
      model, provider_name, ${q.byKey ? sql`key_id::text as key_id,` : sql``}
      sum(requests)::text as requests,
      sum(tokens_prompt)::text as tokens_prompt,
      sum(tokens_completion)::text as tokens_completion,
      sum(tokens_reasoning)::text as tokens_reasoning,
      sum(cost)::text as cost
    from billing.usage_daily
    where account_id = ${q.accountId}
      and day >= ${q.from.toISOString().slice(0, 10)}::date and day < ${q.to.toISOString().slice(0, 10)}::date
      ${q.keyId ? sql`and key_id = ${q.keyId}` : sql``}
    group by 1, 2, 3 ${q.byKey ? sql`, key_id` : sql``}
    order by 1 desc, sum(cost) desc, 2, 3`.execute(db);
  return rows;
}

export interface LatencyRow {
  group: string | null;
  requests: string;
  errors: string;
  tokens_completion: string;
  ttft_ms: string;
  total_ms: string;
  ttft_hist: string[];
  total_hist: string[];
}

/**
 * Latency per model or provider over [from, to): the sums per group, and the histograms summed
 * bucket by bucket (`unnest … with ordinality`, one hash aggregate: an element-wise aggregate
 * function per row was 20× slower), the `limit` groups with the most requests. Percentiles are read
 * from the histograms by the caller (latency.ts).
 */
export async function queryLatency(
  db: BillingDb,
  q: UsageQuery & { groupBy: 'model' | 'provider' | 'none'; limit: number },
): Promise<LatencyRow[]> {
  const s = source({ ...q, granularity: 'total' });
  const group = GROUP_COLUMN[q.groupBy];
  const { rows } = await sql<
    Omit<LatencyRow, 'ttft_hist' | 'total_hist'> & { hists: [number, string, string][] }
  >`
    with base as (
      select ${group}::text as g, requests, errors, tokens_completion, ttft_ms, total_ms, ttft_hist, total_hist
      from ${s.table}
      where account_id = ${q.accountId} and ${s.time} >= ${s.lower} and ${s.time} < ${s.upper}
        ${filtersOf(q)}
    ), sums as (
      select g, sum(requests) as requests, sum(errors) as errors, sum(tokens_completion) as tokens_completion,
        sum(ttft_ms) as ttft_ms, sum(total_ms) as total_ms
      from base group by g
      order by sum(requests) desc, g nulls first
      limit ${q.limit}
    ), buckets as (
      select b.g, u.k, sum(u.t) as t, sum(u.n) as n
      from base b, unnest(b.ttft_hist, b.total_hist) with ordinality as u(t, n, k)
      where exists (select 1 from sums s where s.g is not distinct from b.g)
      group by b.g, u.k
    )
    select s.g as "group", s.requests::text, s.errors::text, s.tokens_completion::text,
      s.ttft_ms::text, s.total_ms::text,
      coalesce((select json_agg(json_build_array(k, t::text, n::text)) from buckets x
        where x.g is not distinct from s.g), '[]') as hists
    from sums s
    order by s.requests desc, s.g nulls first`.execute(db);
  return rows.map(({ hists, ...r }) => {
    const ttft: string[] = [];
    const total: string[] = [];
    for (const [k, t, n] of hists) {
      ttft[k - 1] = t ?? '0';
      total[k - 1] = n ?? '0';
    }
    return {
      ...r,
      ttft_hist: Array.from(ttft, (v) => v ?? '0'),
      total_hist: Array.from(total, (v) => v ?? '0'),
    };
  });
}
