import { prepared } from '@tollgate/db';
import { sql } from 'kysely';
import { LATENCY_UPSERT, type LatencyRollupRow } from '../analytics/latency-rollup';
import type { RollupRow } from '../analytics/usage-rollup';
import type { BillingDb } from '../database';

/** What one batch adds, each list sorted by primary key (the same lock order in every worker). */
export interface BatchSums {
  /** Increments of `billing.usage_hourly` (`bucket` = hour). */
  hourly: readonly RollupRow[];
  /** Increments of `billing.usage_daily` (`bucket` = day). */
  daily: readonly RollupRow[];
  /** Increments of `billing.latency_hourly` and `billing.latency_daily` (analytics/latency-rollup.ts). */
  latencyHourly: readonly LatencyRollupRow[];
  latencyDaily: readonly LatencyRollupRow[];
  /** Increments of `billing.key_spend`, amounts as decimal strings. */
  keySpend: readonly { key_id: string; account_id: string; period: string; amount: string }[];
  /** Increments of `billing.account_usage`. */
  accountUsage: readonly { account_id: string; amount: string }[];
  /** (key, period) pairs the batch touched without adding to them: their totals are read. */
  readKeySpend: readonly { key_id: string; period: string }[];
  /** Accounts the batch touched without adding to them: their totals are read. */
  readAccounts: readonly string[];
  /** Increments of `billing.team_spend` (issue 29; events with a `team_id`). Optional: none. */
  teamSpend?: readonly { team_id: string; account_id: string; period: string; amount: string }[];
  /** (team, period) pairs the batch touched without adding to them: their totals are read. */
  readTeamSpend?: readonly { team_id: string; period: string }[];
}

export interface BatchTotals {
  /** Committed total per (key, period) of `keySpend` and `readKeySpend` (absent pairs: none yet). */
  keys: Array<{ key_id: string; period: string; amount: string }>;
  /** Committed total per account of `accountUsage` and `readAccounts`. */
  accounts: Array<{ account_id: string; amount: string }>;
  /** Committed total per (team, period) of `teamSpend` and `readTeamSpend`. */
  teams: Array<{ team_id: string; period: string; amount: string }>;
}

const rollupSums = `
  requests = t.requests + excluded.requests,
  tokens_prompt = t.tokens_prompt + excluded.tokens_prompt,
  tokens_completion = t.tokens_completion + excluded.tokens_completion,
  tokens_cached = t.tokens_cached + excluded.tokens_cached,
  tokens_cache_write = t.tokens_cache_write + excluded.tokens_cache_write,
  tokens_reasoning = t.tokens_reasoning + excluded.tokens_reasoning,
  cost = t.cost + excluded.cost,
  errors = t.errors + excluded.errors`;
const rollupColumns =
  'account_id, key_id, model, app, provider_name, requests, tokens_prompt, tokens_completion, tokens_cached, tokens_cache_write, tokens_reasoning, cost, errors';

/** A roll-up increment as `json_to_recordset` reads it (BatchSums' hourly and daily rows). */
const ROLLUP_RECORD = `account_id uuid, bucket text, key_id uuid, model text, app text, provider_name text,
  requests bigint, tokens_prompt bigint, tokens_completion bigint, tokens_cached bigint,
  tokens_cache_write bigint, tokens_reasoning bigint, cost numeric, errors bigint`;

/**
 * Applies a batch's sums in ONE statement (a round trip instead of six): the hourly and daily
 * roll-up upserts (with the per-account and per-dimension hourly sums), the spend upserts per
 * (key, period) and per account returning the totals after
 * the increment, and the totals of what the batch touched without adding to. Every list is one
 * JSON parameter expanded by `json_to_recordset` in its (sorted) order. Runs in the caller's
 * transaction, after the generation insert.
 */
export async function applyBatchSums(trx: BillingDb, s: BatchSums): Promise<BatchTotals> {
  const json = (v: unknown) => sql`${JSON.stringify(v)}::json`;
  const { rows } = await sql<{
    kind: 'k' | 'a' | 't';
    id: string;
    period: string | null;
    amount: string;
  }>`${prepared('billing_apply_batch_sums')}
    with hourly as (
      insert into billing.usage_hourly as t (hour, ${sql.raw(rollupColumns)})
      select bucket::timestamptz, ${sql.raw(rollupColumns)}
      from json_to_recordset(${json(s.hourly)}) as r(${sql.raw(ROLLUP_RECORD)})
      on conflict (account_id, hour, key_id, model, app, provider_name) do update set ${sql.raw(rollupSums)}
    ), account_hourly as (
      -- The same increments summed per (account, hour), in primary key order (the lock order).
      insert into billing.usage_account_hourly as t (account_id, hour, requests, tokens_prompt, tokens_completion,
        tokens_cached, tokens_cache_write, tokens_reasoning, cost, errors)
      select account_id, bucket::timestamptz, sum(requests), sum(tokens_prompt), sum(tokens_completion),
        sum(tokens_cached), sum(tokens_cache_write), sum(tokens_reasoning), sum(cost), sum(errors)
      from json_to_recordset(${json(s.hourly)}) as r(
        account_id uuid, bucket text, requests bigint, tokens_prompt bigint, tokens_completion bigint,
        tokens_cached bigint, tokens_cache_write bigint, tokens_reasoning bigint, cost numeric, errors bigint)
      group by 1, 2
      order by 1, 2
      on conflict (account_id, hour) do update set ${sql.raw(rollupSums)}
    ), group_hourly as (
      -- The same increments summed per (account, dimension, hour, value) for each of the four
      -- dimensions, in primary key order (the lock order).
      insert into billing.usage_group_hourly as t (account_id, dimension, hour, value, requests, tokens_prompt,
        tokens_completion, tokens_cached, tokens_cache_write, tokens_reasoning, cost, errors)
      select account_id, d.dimension, bucket::timestamptz, d.value, sum(requests), sum(tokens_prompt),
        sum(tokens_completion), sum(tokens_cached), sum(tokens_cache_write), sum(tokens_reasoning), sum(cost),
        sum(errors)
      from json_to_recordset(${json(s.hourly)}) as r(${sql.raw(ROLLUP_RECORD)})
      cross join lateral (values ('model', r.model), ('app', r.app), ('key', r.key_id::text),
        ('provider', r.provider_name)) as d(dimension, value)
      group by 1, 2, 3, 4
      order by 1, 2, 3, 4
      on conflict (account_id, dimension, hour, value) do update set ${sql.raw(rollupSums)}
    ), key_group_hourly as (
      -- Per (account, key, dimension, hour, value) for model, app and provider, in primary key order.
      insert into billing.usage_key_group_hourly as t (account_id, key_id, dimension, hour, value, requests,
        tokens_prompt, tokens_completion, tokens_cached, tokens_cache_write, tokens_reasoning, cost, errors)
      select account_id, key_id, d.dimension, bucket::timestamptz, d.value, sum(requests), sum(tokens_prompt),
        sum(tokens_completion), sum(tokens_cached), sum(tokens_cache_write), sum(tokens_reasoning), sum(cost),
        sum(errors)
      from json_to_recordset(${json(s.hourly)}) as r(${sql.raw(ROLLUP_RECORD)})
      cross join lateral (values ('model', r.model), ('app', r.app), ('provider', r.provider_name))
        as d(dimension, value)
      group by 1, 2, 3, 4, 5
      order by 1, 2, 3, 4, 5
      on conflict (account_id, key_id, dimension, hour, value) do update set ${sql.raw(rollupSums)}
    ), daily as (
      insert into billing.usage_daily as t (day, ${sql.raw(rollupColumns)})
      select bucket::date, ${sql.raw(rollupColumns)}
      from json_to_recordset(${json(s.daily)}) as r(${sql.raw(ROLLUP_RECORD)})
      on conflict (account_id, day, key_id, model, app, provider_name) do update set ${sql.raw(rollupSums)}
    ), latency_hourly as (
      ${sql.raw(LATENCY_UPSERT.hour.head)}${json(s.latencyHourly)}${sql.raw(LATENCY_UPSERT.hour.tail)}
    ), latency_daily as (
      ${sql.raw(LATENCY_UPSERT.day.head)}${json(s.latencyDaily)}${sql.raw(LATENCY_UPSERT.day.tail)}
    ), ks as (
      insert into billing.key_spend as t (key_id, account_id, period, amount)
      select key_id, account_id, period, amount
      from json_to_recordset(${json(s.keySpend)}) as r(key_id uuid, account_id uuid, period text, amount numeric)
      on conflict (key_id, period) do update set amount = t.amount + excluded.amount
      returning key_id, period, amount
    ), au as (
      insert into billing.account_usage as t (account_id, amount)
      select account_id, amount
      from json_to_recordset(${json(s.accountUsage)}) as r(account_id uuid, amount numeric)
      on conflict (account_id) do update set amount = t.amount + excluded.amount
      returning account_id, amount
    ), ts as (
      insert into billing.team_spend as t (team_id, account_id, period, amount)
      select team_id, account_id, period, amount
      from json_to_recordset(${json(s.teamSpend ?? [])}) as r(team_id uuid, account_id uuid, period text, amount numeric)
      on conflict (team_id, period) do update set amount = t.amount + excluded.amount
      returning team_id, period, amount
    )
    select 'k' as kind, key_id::text as id, period, amount::text as amount from ks
    union all
    select 'a', account_id::text, null, amount::text from au
    union all
    select 'k', k.key_id::text, k.period, k.amount::text
    from billing.key_spend k
    join json_to_recordset(${json(s.readKeySpend)}) as r(key_id uuid, period text)
      on k.key_id = r.key_id and k.period = r.period
    union all
    select 'a', a.account_id::text, null, a.amount::text
    from billing.account_usage a
    where a.account_id in (select value::uuid from json_array_elements_text(${json(s.readAccounts)}))
    union all
    select 't', team_id::text, period, amount::text from ts
    union all
    select 't', t.team_id::text, t.period, t.amount::text
    from billing.team_spend t
    join json_to_recordset(${json(s.readTeamSpend ?? [])}) as r(team_id uuid, period text)
      on t.team_id = r.team_id and t.period = r.period`.execute(trx);
  const totals: BatchTotals = { keys: [], accounts: [], teams: [] };
  for (const r of rows) {
    if (r.kind === 'k') totals.keys.push({ key_id: r.id, period: r.period as string, amount: r.amount });
    else if (r.kind === 't')
      totals.teams.push({ team_id: r.id, period: r.period as string, amount: r.amount });
    else totals.accounts.push({ account_id: r.id, amount: r.amount });
  }
  return totals;
}
