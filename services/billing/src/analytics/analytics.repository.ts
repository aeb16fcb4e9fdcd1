import { sql } from 'kysely';
import type { BillingDb } from '../database';

export type Granularity = 'hour' | 'day' | 'total';
export type GroupBy = 'model' | 'app' | 'key' | 'provider' | 'none';

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

/**
 * Sums the hourly roll-ups of one account over [from, to): a range scan of the primary key
 * (account_id, hour, …). Never touches billing.generations.
 */
export async function queryUsage(db: BillingDb, q: UsageQuery): Promise<UsageRow[]> {
  const bucket =
    q.granularity === 'total' ? sql`null::timestamptz` : sql`date_trunc(${q.granularity}, hour, 'UTC')`;
  const group = GROUP_COLUMN[q.groupBy];
  const f = q.filters ?? {};
  const { rows } = await sql<UsageRow>`
    select ${bucket} as bucket, ${group}::text as "group",
      sum(requests)::text as requests,
      sum(tokens_prompt)::text as tokens_prompt,
      sum(tokens_completion)::text as tokens_completion,
      sum(tokens_cached)::text as tokens_cached,
      sum(tokens_cache_write)::text as tokens_cache_write,
      sum(tokens_reasoning)::text as tokens_reasoning,
      sum(cost)::text as cost
    from billing.usage_hourly
    where account_id = ${q.accountId} and hour >= ${q.from} and hour < ${q.to}
      ${f.keyId ? sql`and key_id = ${f.keyId}` : sql``}
      ${f.model ? sql`and model = ${f.model}` : sql``}
      ${f.app !== undefined ? sql`and app = ${f.app}` : sql``}
      ${f.provider ? sql`and provider_name = ${f.provider}` : sql``}
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

/** Daily usage per model and provider over [from, to) (whole UTC days), newest day first. */
export async function queryActivity(
  db: BillingDb,
  q: { accountId: string; from: Date; to: Date; keyId?: string },
): Promise<ActivityRow[]> {
  const { rows } = await sql<ActivityRow>`
    select to_char(date_trunc('day', hour, 'UTC') at time zone 'UTC', 'YYYY-MM-DD') as date,
      model, provider_name,
      sum(requests)::text as requests,
      sum(tokens_prompt)::text as tokens_prompt,
      sum(tokens_completion)::text as tokens_completion,
      sum(tokens_reasoning)::text as tokens_reasoning,
      sum(cost)::text as cost
    from billing.usage_hourly
    where account_id = ${q.accountId} and hour >= ${q.from} and hour < ${q.to}
      ${q.keyId ? sql`and key_id = ${q.keyId}` : sql``}
    group by 1, 2, 3
    order by 1 desc, sum(cost) desc, 2, 3`.execute(db);
  return rows;
}
