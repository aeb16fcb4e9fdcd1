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
  /** Only these groups (their roll-up values: '' is "no app"). */
  groups?: readonly string[];
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
 * The groups of a grouped query ranked by cost over the whole range (then requests, then value),
 * `limit` of them from `offset`: the top N an answer is bounded to (an X-Title per request would
 * otherwise make every answer as large as the records).
 */
export async function rankGroups(
  db: BillingDb,
  q: UsageQuery & { limit: number; offset: number },
): Promise<string[]> {
  const s = source(q);
  const group = GROUP_COLUMN[q.groupBy];
  const { rows } = await sql<{ group: string }>`
    select ${group}::text as "group"
    from ${s.table}
    where account_id = ${q.accountId} and ${s.time} >= ${s.lower} and ${s.time} < ${s.upper}
      ${filtersOf(q)}
    group by 1
    order by sum(cost) desc, sum(requests) desc, 1
    limit ${q.limit} offset ${q.offset}`.execute(db);
  return rows.map((r) => r.group);
}

/**
 * Sums one account's roll-ups over [from, to): a range scan of a roll-up table's primary key
 * (account_id, hour|day, …). Hourly buckets read `usage_hourly`; daily buckets, and totals over whole
 * UTC days, read `usage_daily` (the caller aligns day queries to whole days). Never touches
 * billing.generations.
 */
export async function queryUsage(db: BillingDb, q: UsageQuery): Promise<UsageRow[]> {
  const { daily, table, time, lower, upper } = source(q);
  const bucket =
    q.granularity === 'total'
      ? sql`null::timestamptz`
      : daily
        ? sql`(day::timestamp at time zone 'UTC')`
        : sql`hour`;
  const group = GROUP_COLUMN[q.groupBy];
  const only = q.groups ? sql`and ${group}::text = any(${[...q.groups]}::text[])` : sql``;
  const { rows } = await sql<UsageRow>`
    select ${bucket} as bucket, ${group}::text as "group",
      sum(requests)::text as requests,
      sum(tokens_prompt)::text as tokens_prompt,
      sum(tokens_completion)::text as tokens_completion,
      sum(tokens_cached)::text as tokens_cached,
      sum(tokens_cache_write)::text as tokens_cache_write,
      sum(tokens_reasoning)::text as tokens_reasoning,
      sum(cost)::text as cost
    from ${table}
    where account_id = ${q.accountId} and ${time} >= ${lower} and ${time} < ${upper}
      ${filtersOf(q)} ${only}
    group by 1, 2
    order by 1 nulls first, sum(cost) desc, 2`.execute(db);
  return rows;
}

export interface ActivityRow {
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
  q: { accountId: string; from: Date; to: Date; keyId?: string },
): Promise<ActivityRow[]> {
  const { rows } = await sql<ActivityRow>`
    select day::text as date,
      model, provider_name,
      sum(requests)::text as requests,
      sum(tokens_prompt)::text as tokens_prompt,
      sum(tokens_completion)::text as tokens_completion,
      sum(tokens_reasoning)::text as tokens_reasoning,
      sum(cost)::text as cost
    from billing.usage_daily
    where account_id = ${q.accountId}
      and day >= ${q.from.toISOString().slice(0, 10)}::date and day < ${q.to.toISOString().slice(0, 10)}::date
      ${q.keyId ? sql`and key_id = ${q.keyId}` : sql``}
    group by 1, 2, 3
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
 * Latency per model or provider over [from, to): sums and element-wise summed histograms of the
 * roll-ups (`billing.hist_sum`), the `limit` groups with the most requests. Percentiles are read from
 * the histograms by the caller (latency.ts).
 */
export async function queryLatency(
  db: BillingDb,
  q: UsageQuery & { groupBy: 'model' | 'provider' | 'none'; limit: number },
): Promise<LatencyRow[]> {
  const s = source({ ...q, granularity: 'total' });
  const group = GROUP_COLUMN[q.groupBy];
  const { rows } = await sql<LatencyRow>`
    select ${group}::text as "group",
      sum(requests)::text as requests,
      sum(errors)::text as errors,
      sum(tokens_completion)::text as tokens_completion,
      sum(ttft_ms)::text as ttft_ms,
      sum(total_ms)::text as total_ms,
      billing.hist_sum(ttft_hist)::text[] as ttft_hist,
      billing.hist_sum(total_hist)::text[] as total_hist
    from ${s.table}
    where account_id = ${q.accountId} and ${s.time} >= ${s.lower} and ${s.time} < ${s.upper}
      ${filtersOf(q)}
    group by 1
    order by sum(requests) desc, 1
    limit ${q.limit}`.execute(db);
  return rows;
}
