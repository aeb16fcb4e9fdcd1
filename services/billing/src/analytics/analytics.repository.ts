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

export const GROUP_COLUMN = {
  model: sql.ref('model'),
  app: sql.ref('app'),
  key: sql.ref('key_id'),
  provider: sql.ref('provider_name'),
  none: sql`null::text`,
} as const;

const DAY_MS = 86_400_000;
const isDay = (d: Date) => d.getTime() % DAY_MS === 0;

/** No filter at all: the whole account's traffic. */
const unfiltered = (q: UsageQuery) => {
  const f = q.filters ?? {};
  return !f.keyId && !f.model && f.app === undefined && !f.provider;
};

/**
 * The table, time column, bounds, group column and filters a query reads: daily roll-ups for whole
 * days; hours of the whole account (no filters) from `usage_account_hourly` (one row per hour)
 * without grouping, or from `usage_group_hourly` (one row per hour and value of the grouped
 * dimension) with; hours of ONE key (the key filter alone) from `usage_group_hourly`'s key rows
 * without grouping or grouped by key, from `usage_key_group_hourly` (one row per key, hour and value)
 * grouped by model, app or provider. Any other filter reads `usage_hourly`.
 */
export function source(q: UsageQuery) {
  const daily = q.granularity === 'day' || (q.granularity === 'total' && isDay(q.from) && isDay(q.to));
  const f = q.filters ?? {};
  const wholeAccount = !daily && unfiltered(q);
  const oneDimension = wholeAccount && q.groupBy !== 'none';
  const oneKey = !daily && !!f.keyId && !f.model && f.app === undefined && !f.provider;
  const time = daily ? sql.ref('day') : sql.ref('hour');
  const lower = daily ? sql`${q.from.toISOString().slice(0, 10)}::date` : sql`${q.from}::timestamptz`;
  const upper = daily ? sql`${q.to.toISOString().slice(0, 10)}::date` : sql`${q.to}::timestamptz`;
  if (oneKey && (q.groupBy === 'none' || q.groupBy === 'key')) {
    return {
      daily,
      table: sql`billing.usage_group_hourly`,
      group: q.groupBy === 'key' ? sql.ref('value') : GROUP_COLUMN.none,
      dimension: sql`and dimension = 'key' and value = ${f.keyId}::uuid::text`,
      filters: sql``,
      time,
      lower,
      upper,
    };
  }
  // One model (no other filter), by key or not grouped: that model's rows of each key's model hours.
  const oneModel = !daily && !!f.model && !f.keyId && f.app === undefined && !f.provider;
  if (oneModel && (q.groupBy === 'key' || q.groupBy === 'none')) {
    return {
      daily,
      table: sql`billing.usage_key_group_hourly`,
      group: GROUP_COLUMN[q.groupBy],
      dimension: sql`and dimension = 'model' and value = ${f.model}`,
      filters: sql``,
      time,
      lower,
      upper,
    };
  }
  if (oneKey) {
    return {
      daily,
      table: sql`billing.usage_key_group_hourly`,
      group: sql.ref('value'),
      dimension: sql`and key_id = ${f.keyId} and dimension = ${q.groupBy}`,
      filters: sql``,
      time,
      lower,
      upper,
    };
  }
  return {
    daily,
    table: daily
      ? sql`billing.usage_daily`
      : oneDimension
        ? sql`billing.usage_group_hourly`
        : wholeAccount
          ? sql`billing.usage_account_hourly`
          : sql`billing.usage_hourly`,
    group: oneDimension ? sql.ref('value') : GROUP_COLUMN[q.groupBy],
    /** The rows of the grouped dimension in `usage_group_hourly`; nothing for the other tables. */
    dimension: oneDimension ? sql`and dimension = ${q.groupBy}` : sql``,
    /** The filters as conditions on the table's columns. */
    filters: filtersOf(q),
    time,
    lower,
    upper,
  };
}

export function filtersOf(q: UsageQuery) {
  const f = q.filters ?? {};
  return sql`${f.keyId ? sql`and key_id = ${f.keyId}` : sql``}
      ${f.model ? sql`and model = ${f.model}` : sql``}
      ${f.app !== undefined ? sql`and app = ${f.app}` : sql``}
      ${f.provider ? sql`and provider_name = ${f.provider}` : sql``}`;
}

const USAGE_COLUMNS = sql.raw(`key_id, model, app, provider_name, requests, tokens_prompt, tokens_completion,
  tokens_cached, tokens_cache_write, tokens_reasoning, cost`);

/**
 * The rows of a total over hours that are not whole days but hold some: the whole days from
 * `usage_daily`, the hours at either edge from `usage_hourly` (30 days and a few hours: ~7,000 daily
 * rows and ~50 hours' worth instead of ~170,000 hourly rows). Null for any other query.
 */
function splitTotal(q: UsageQuery) {
  if (q.granularity !== 'total' || (isDay(q.from) && isDay(q.to))) return null;
  if (q.groupBy === 'none' && unfiltered(q)) return null; // usage_account_hourly: one row per hour
  const firstDay = new Date(Math.ceil(q.from.getTime() / DAY_MS) * DAY_MS);
  const lastDay = new Date(Math.floor(q.to.getTime() / DAY_MS) * DAY_MS);
  if (lastDay <= firstDay) return null;
  const hours = (from: Date, to: Date) => sql`
    select ${USAGE_COLUMNS} from billing.usage_hourly
    where account_id = ${q.accountId} and hour >= ${from}::timestamptz and hour < ${to}::timestamptz ${filtersOf(q)}`;
  return sql`(
    ${hours(q.from, firstDay)}
    union all
    select ${USAGE_COLUMNS} from billing.usage_daily
    where account_id = ${q.accountId} and day >= ${firstDay.toISOString().slice(0, 10)}::date
      and day < ${lastDay.toISOString().slice(0, 10)}::date ${filtersOf(q)}
    union all
    ${hours(lastDay, q.to)}) as r`;
}

/**
 * Sums one account's roll-ups over [from, to): a range scan of a roll-up table's primary key
 * (account_id, hour|day, …). Hourly buckets read `usage_hourly` (or, for the whole account,
 * `usage_account_hourly` / `usage_group_hourly`: see `source`); daily buckets, and totals over whole
 * UTC days, read `usage_daily` (the caller aligns day queries to whole days); other totals read both
 * (splitTotal). Never touches billing.generations.
 */
/** The ranked statement both forms of queryUsage share: `base` (the sums) and `ranked` (the groups kept). */
function rankedUsage(q: UsageQuery & { rank?: { limit: number; offset: number } }) {
  const { daily, table, time, lower, upper, dimension, filters, group: column } = source(q);
  const split = splitTotal(q);
  const bucket =
    q.granularity === 'total'
      ? sql`null::timestamptz`
      : daily
        ? sql`(day::timestamp at time zone 'UTC')`
        : sql`hour`;
  const group = split ? GROUP_COLUMN[q.groupBy] : column;
  const base = sql`
    select ${bucket} as bucket, ${group}::text as "group",
      sum(requests) as requests, sum(tokens_prompt) as tokens_prompt,
      sum(tokens_completion) as tokens_completion, sum(tokens_cached) as tokens_cached,
      sum(tokens_cache_write) as tokens_cache_write, sum(tokens_reasoning) as tokens_reasoning,
      sum(cost) as cost
    from ${
      split ??
      sql`${table} where account_id = ${q.accountId} ${dimension} and ${time} >= ${lower} and ${time} < ${upper}
        ${filters}`
    }
    group by 1, 2`;
  // Grouped and bounded: the groups ranked by cost over the whole range, in the same statement (one
  // scan of the roll-ups), `limit` of them from `offset`; `ranked` says whether more remain.
  const rank = q.rank ?? { limit: 1_000_000, offset: 0 };
  return {
    rank,
    with: sql`with base as (${base}), ranked as (
      select "group", row_number() over (order by sum(cost) desc, sum(requests) desc, "group") as rn
      from base group by "group"
      order by rn limit ${rank.limit + 1} offset ${rank.offset}
    )`,
    kept: sql`exists (
      select 1 from ranked r where r.rn <= ${rank.offset + rank.limit} and r."group" is not distinct from b."group")`,
  };
}

/**
 * Sums one account's roll-ups over [from, to): a range scan of a roll-up table's primary key
 * (account_id, hour|day, …). Hourly buckets read `usage_hourly` (or, for the whole account,
 * `usage_account_hourly` / `usage_group_hourly`, and for one key `usage_key_group_hourly`: see
 * `source`); daily buckets, and totals over whole UTC days, read `usage_daily` (the caller aligns day
 * queries to whole days); other totals read both (splitTotal). Never touches billing.generations.
 */
export async function queryUsage(
  db: BillingDb,
  q: UsageQuery & { rank?: { limit: number; offset: number } },
): Promise<{ rows: UsageRow[]; more: boolean }> {
  const r = rankedUsage(q);
  const { rows } = await sql<UsageRow & { ranked: number }>`
    ${r.with}
    select b.bucket, b."group", b.requests::text, b.tokens_prompt::text, b.tokens_completion::text,
      b.tokens_cached::text, b.tokens_cache_write::text, b.tokens_reasoning::text, b.cost::text,
      (select count(*) from ranked)::int as ranked
    from base b
    where ${r.kept}
    order by 1 nulls first, b.cost desc, 2`.execute(db);
  return { rows, more: (rows[0]?.ranked ?? 0) > r.rank.limit };
}

/**
 * queryUsage's rows already in their wire form (`UsageRowView`, the same order), built by Postgres as
 * ONE JSON text: an hourly chart of a month holds thousands of rows, and parsing each into a JS row,
 * formatting its cost and serialising it again cost more than the query itself (bench/README.md).
 * Exactly what `usageRowView` makes of a row: bucket as ISO-8601 UTC with milliseconds, counts as
 * numbers, cost as the exact decimal without trailing zeros (`trim_scale`, as @tollgate/money's
 * toDecimal), '' (no X-Title) as a null app group, no group without grouping.
 */
export async function queryUsageJson(
  db: BillingDb,
  q: UsageQuery & { rank?: { limit: number; offset: number } },
): Promise<{ json: string; more: boolean }> {
  const r = rankedUsage(q);
  const group =
    q.groupBy === 'none'
      ? sql`null::text`
      : q.groupBy === 'app'
        ? sql`nullif(b."group", '')`
        : sql`b."group"`;
  const { rows } = await sql<{ json: string; ranked: number }>`
    ${r.with}
    select coalesce(json_agg(json_build_object(
        'bucket', to_char(b.bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'group', ${group},
        'requests', b.requests, 'tokens_prompt', b.tokens_prompt, 'tokens_completion', b.tokens_completion,
        'tokens_cached', b.tokens_cached, 'tokens_cache_write', b.tokens_cache_write,
        'tokens_reasoning', b.tokens_reasoning, 'cost', trim_scale(b.cost)::text)
      order by b.bucket nulls first, b.cost desc, b."group"), '[]')::text as json,
      (select count(*) from ranked)::int as ranked
    from base b
    where ${r.kept}`.execute(db);
  const row = rows[0]!;
  return { json: row.json, more: row.ranked > r.rank.limit };
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
