/**
 * Analytics query benchmark: a 30-day grouped query over the hourly roll-ups of ≥ 1M generations.
 *
 *   pnpm exec tsx bench/analytics-query.ts [--generations 1000000] [--keys 5] [--models 6] [--apps 4]
 *                                          [--providers 2] [--runs 40]
 *
 * 1. A fresh database (test kit) migrated by billing itself.
 * 2. N generation records of one account spread evenly over the last 30 days (plus N/10 of a second
 *    account, so the account filter matters), inserted with one generate_series statement.
 * 3. The hourly and daily roll-ups built from exactly those records with INSERT … SELECT … GROUP BY
 *    (the rows the worker writes, batch by batch, in the generation transaction), checked to hold the
 *    same request count and cost as the records.
 * 4. Timed: billing's internal analytics API, 30 days by day grouped by model (and by app, key,
 *    provider, and 30 days by hour), the latency query (percentiles from the latency roll-ups'
 *    bucket columns) by model and by provider, and the errors query by day and by hour, `--runs`
 *    times each after a warm-up; p50/p95/max in ms. `--keep` leaves the database for EXPLAIN.
 *    The same query in SQL alone (EXPLAIN ANALYZE execution time) is printed for reference.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { devServiceSigner } from '@tollgate/auth';
import { createTestAmqp, createTestDatabase, createTestRedis } from '@tollgate/testkit';
import pg from 'pg';
import { GROUP_HOURLY_BACKFILL } from '../services/billing/migrations/2026_11_27_190000_usage_group_hourly';
import { KEY_GROUP_HOURLY_BACKFILL } from '../services/billing/migrations/2026_11_27_200000_usage_key_group_hourly';
import { loadConfig, startBilling } from '../services/billing/src/index';

const { values } = parseArgs({
  options: {
    generations: { type: 'string', default: '1000000' },
    keys: { type: 'string', default: '5' },
    models: { type: 'string', default: '6' },
    apps: { type: 'string', default: '4' },
    providers: { type: 'string', default: '2' },
    runs: { type: 'string', default: '40' },
    /** Leaves the seeded database in place and prints its URL (for EXPLAIN by hand). */
    keep: { type: 'boolean', default: false },
  },
});
const N = Number(values.generations);
const K = Number(values.keys);
const M = Number(values.models);
const A = Number(values.apps);
const P = Number(values.providers);
const RUNS = Number(values.runs);

process.env.TOLLGATE_TEST_RUN ??= `bench${Date.now().toString(36)}`;
const [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
const mq = createTestAmqp();
const billing = await startBilling(
  loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    AMQP_URL: mq.url,
    AMQP_PREFIX: mq.prefix,
    LOG_LEVEL: 'warn',
    WORKER_ENABLED: 'false',
  }),
);
const db = new pg.Client({ connectionString: database.url });
await db.connect();
const account = randomUUID();
const noise = randomUUID();
const keys = Array.from({ length: K }, () => randomUUID());
const now = new Date();
const t0 = new Date(now.getTime() - 30 * 24 * 3600_000);

async function insertGenerations(accountId: string, count: number, keyIds: string[]) {
  // One statement; each dimension drawn independently (random()), so every combination occurs each hour.
  await db.query(
    `insert into billing.generations (id, account_id, key_id, model, provider_name, upstream_model, upstream_id,
      app, streamed, cancelled, finish_reason, tokens_prompt, tokens_completion, tokens_cached,
      tokens_cache_write, tokens_reasoning, total_cost, is_byok, usage_source, latency_ms,
      generation_time_ms, gateway_overhead_us, error, created_at, finished_at)
    select 'gen-bench-' || $1::text || '-' || g,
      $1::uuid,
      ($2::uuid[])[1 + floor(random() * ${keyIds.length})::int],
      'vendor/model-' || floor(random() * ${M})::int,
      'provider-' || floor(random() * ${P})::int,
      'upstream-model',
      null,
      nullif('app-' || floor(random() * ${A})::int, 'app-0'),
      g % 2 = 0, false, 'stop',
      100 + g % 900, 20 + g % 400, g % 50, 0, g % 30,
      ((g % 997) + 1) * 0.0000001375,
      false, 'provider', 50 + (g * 7919) % 2000, 50 + (g * 7919) % 2000 + 200 + g % 5000,
      200 + (g * 104729) % 3000,
      case when g % 50 = 0 then '{"code": 502, "message": "upstream failed"}'::jsonb end,
      $3::timestamptz + (g::double precision / ${count}) * interval '30 days',
      $3::timestamptz + (g::double precision / ${count}) * interval '30 days'
    from generate_series(1::bigint, ${count}::bigint) as g`,
    [accountId, keyIds, t0],
  );
}

function ms(start: bigint) {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

console.log(`inserting ${N} generations (+${Math.floor(N / 10)} of another account)…`);
let start = process.hrtime.bigint();
// generations is partitioned by month of created_at: the months the 30 days cover, as billing makes them.
await billing.partitions.ensureFor([t0.toISOString(), now.toISOString()]);
await insertGenerations(account, N, keys);
await insertGenerations(noise, Math.floor(N / 10), [randomUUID()]);
console.log(`  inserted in ${(ms(start) / 1000).toFixed(1)} s`);

start = process.hrtime.bigint();
// 172 k groups × 20 aggregates: in memory, not spilled to disk (this session only).
await db.query(`set work_mem = '512MB'`);
// The latency histograms' buckets as services/billing/src/analytics/latency.ts draws them (bench only).
await db.query(`create function pg_temp.lat_bucket(v bigint) returns int language sql immutable as
  $$ select case when v < 25 then 0 else least(24, floor(2 * ln(v / 25.0::float8) / ln(2.0::float8))::int + 1) end $$`);
const usageColumns = `account_id, key_id, model, app, provider_name, requests, tokens_prompt, tokens_completion,
  tokens_cached, tokens_cache_write, tokens_reasoning, cost, errors`;
await db.query(`
  insert into billing.usage_hourly (hour, ${usageColumns})
  select date_trunc('hour', finished_at, 'UTC'), account_id, key_id, model, coalesce(app, ''), provider_name,
    count(*), sum(tokens_prompt), sum(tokens_completion), sum(tokens_cached), sum(tokens_cache_write),
    sum(tokens_reasoning), sum(total_cost), count(*) filter (where error is not null)
  from billing.generations
  group by 1, 2, 3, 4, 5, 6`);
await db.query(`
  insert into billing.usage_daily (day, ${usageColumns})
  select (hour at time zone 'UTC')::date, ${usageColumns.replace(/(requests|tokens_\w+|cost|errors)/g, 'sum($1)')}
  from billing.usage_hourly
  group by 1, 2, 3, 4, 5, 6`);
await db.query(`
  insert into billing.usage_account_hourly
  select account_id, hour, ${usageColumns
    .split(',')
    .slice(5)
    .map((c) => `sum(${c.trim()})`)
    .join(', ')}
  from billing.usage_hourly
  group by account_id, hour`);
// Per (hour, dimension, value): what grouped hourly queries of the whole account read.
await db.query(GROUP_HOURLY_BACKFILL);
await db.query(KEY_GROUP_HOURLY_BACKFILL);
// The latency roll-ups: the same records per (hour, key, model, provider), one bucket column each.
const hists = { ttft: 'ttft_b', total: 'total_b', overhead: 'overhead_b' } as const;
const bucketCols = Object.keys(hists).flatMap((h) =>
  Array.from({ length: 25 }, (_, k) => `${h}_b${String(k).padStart(2, '0')}`),
);
const bucketCounts = Object.values(hists).flatMap((b) =>
  Array.from({ length: 25 }, (_, k) => `count(*) filter (where ${b} = ${k})`),
);
const latencyColumns = `account_id, key_id, model, provider_name, requests, errors, tokens_completion, ttft_ms,
  total_ms, gen_ms, overhead_us, overhead_n, ${bucketCols.join(', ')}`;
await db.query(`
  insert into billing.latency_hourly (hour, ${latencyColumns})
  select date_trunc('hour', finished_at, 'UTC'), account_id, key_id, model, provider_name,
    count(*), count(*) filter (where error is not null), sum(tokens_completion), sum(latency_ms),
    sum(generation_time_ms),
    sum(case when streamed then generation_time_ms - latency_ms else generation_time_ms end),
    coalesce(sum(gateway_overhead_us), 0), count(gateway_overhead_us), ${bucketCounts.join(', ')}
  from (select *, pg_temp.lat_bucket(latency_ms) as ttft_b, pg_temp.lat_bucket(generation_time_ms) as total_b,
      pg_temp.lat_bucket(gateway_overhead_us) as overhead_b
    from billing.generations) g
  group by 1, 2, 3, 4, 5`);
await db.query(`
  insert into billing.latency_daily (day, ${latencyColumns})
  select (hour at time zone 'UTC')::date, account_id, key_id, model, provider_name,
    ${latencyColumns
      .split(',')
      .slice(4)
      .map((c) => `sum(${c.trim()})`)
      .join(', ')}
  from billing.latency_hourly
  group by 1, 2, 3, 4, 5`);
await db.query('analyze billing.latency_hourly');
await db.query('analyze billing.latency_daily');
await db.query('analyze billing.usage_hourly');
await db.query('analyze billing.usage_daily');
await db.query('analyze billing.usage_group_hourly');
await db.query('analyze billing.usage_key_group_hourly');
const { rows: counts } = await db.query<{
  rollups: string;
  daily: string;
  requests: string;
  cost: string;
  gen_cost: string;
  latency_requests: string;
  group_sums: string;
  key_group_sums: string;
}>(
  `select (select count(*) from billing.usage_hourly where account_id = $1)::text as rollups,
    (select count(*) from billing.usage_daily where account_id = $1)::text as daily,
    (select sum(requests) from billing.usage_hourly where account_id = $1)::text as requests,
    (select sum(cost) from billing.usage_hourly where account_id = $1)::text as cost,
    (select sum(total_cost) from billing.generations where account_id = $1)::text as gen_cost,
    (select sum(requests) from billing.latency_daily where account_id = $1)::text as latency_requests,
    (select string_agg(distinct r || ' ' || c, ',') from (select sum(requests)::text as r, sum(cost)::text as c
      from billing.usage_group_hourly where account_id = $1 group by dimension) d) as group_sums,
    (select string_agg(distinct r || ' ' || c, ',') from (select sum(requests)::text as r, sum(cost)::text as c
      from billing.usage_key_group_hourly where account_id = $1 group by dimension) d) as key_group_sums`,
  [account],
);
const c = counts[0]!;
if (
  Number(c.requests) !== N ||
  Number(c.latency_requests) !== N ||
  c.cost !== c.gen_cost ||
  c.group_sums !== `${N} ${c.cost}` || // every dimension sums to the same requests and cost
  c.key_group_sums !== `${N} ${c.cost}`
) {
  throw new Error(`roll-ups disagree with the records: ${JSON.stringify(c)}`);
}
console.log(
  `  roll-ups built in ${(ms(start) / 1000).toFixed(1)} s: ${c.rollups} hourly + ${c.daily} daily rows for the account (${c.requests} requests, cost ${c.cost} USD)`,
);

const from = new Date(Math.floor(t0.getTime() / 3600_000) * 3600_000).toISOString();
const to = new Date(Math.ceil(now.getTime() / 3600_000) * 3600_000 + 3600_000).toISOString();
const token = () => devServiceSigner('dashboard').sign('billing'); // usage reads: the dashboard's route

async function timeQuery(label: string, query: string, route = 'usage') {
  const url = `${billing.url}/internal/accounts/${account}/${route}?from=${from}&to=${to}&${query}`;
  const once = async () => {
    const s = process.hrtime.bigint();
    const res = await fetch(url, { headers: { 'x-service-token': await token() } });
    const body = (await res.json()) as { data: { rows: unknown[] } };
    if (res.status !== 200) throw new Error(`${label}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return { t: ms(s), rows: body.data.rows.length };
  };
  for (let i = 0; i < 3; i++) await once();
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await once();
    times.push(r.t);
    rows = r.rows;
  }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!;
  console.log(
    `  ${label.padEnd(34)} p50 ${pct(50).toFixed(1).padStart(6)} ms  p95 ${pct(95).toFixed(1).padStart(6)} ms  max ${times.at(-1)!.toFixed(1).padStart(6)} ms  (${rows} result rows)`,
  );
  return pct(50);
}

console.log(
  `\n30-day queries through GET /internal/accounts/:id/usage (${RUNS} runs each, after 3 warm-up):`,
);
const headline = await timeQuery('by day, grouped by model', 'granularity=day&group_by=model');
await timeQuery('by day, grouped by app', 'granularity=day&group_by=app');
await timeQuery('by day, grouped by key', 'granularity=day&group_by=key');
await timeQuery('by day, grouped by provider', 'granularity=day&group_by=provider');
await timeQuery('total, grouped by model', 'granularity=total&group_by=model');
await timeQuery('by hour, no grouping', 'granularity=hour&group_by=none');
// Grouped hours of the whole account: one row per (hour, value) of the dimension (usage_group_hourly).
await timeQuery('by hour, grouped by model', 'granularity=hour&group_by=model');
await timeQuery('by hour, grouped by app', 'granularity=hour&group_by=app');
await timeQuery('by hour, grouped by key', 'granularity=hour&group_by=key');
await timeQuery('by hour, grouped by provider', 'granularity=hour&group_by=provider');
// One key's hours: usage_key_group_hourly grouped (one row per hour and value), usage_group_hourly's key rows without.
await timeQuery('by hour, one key, by model', `granularity=hour&group_by=model&key_id=${keys[0]}`);
await timeQuery('by hour, one key, no grouping', `granularity=hour&group_by=none&key_id=${keys[0]}`);
// Any other filter still reads usage_hourly (one model's rows of every hour).
await timeQuery('by hour, one model, by key', 'granularity=hour&group_by=key&model=vendor/model-0');
// Errors and latency: percentiles from the roll-ups' histograms (GET …/latency reads the hourly table).
await timeQuery('latency + errors by model', 'group_by=model', 'latency');
await timeQuery('latency + errors by provider', 'group_by=provider', 'latency');
await timeQuery('latency, one key, by model', `group_by=model&key_id=${keys[0]}`, 'latency');
// Errors and refusals per bucket (GET …/errors: requests and upstream errors from the latency roll-ups).
await timeQuery('errors by day, grouped by key', 'granularity=day&group_by=key', 'errors');
await timeQuery('errors by hour, no grouping', 'granularity=hour&group_by=none', 'errors');

const { rows: plan } = await db.query<{ 'QUERY PLAN': string }>(
  `explain (analyze, format text)
  select day, model, sum(requests), sum(tokens_prompt), sum(cost)
  from billing.usage_daily where account_id = $1 and day >= $2::date and day < $3::date
  group by 1, 2`,
  [account, from.slice(0, 10), to.slice(0, 10)],
);
console.log(
  `\nSQL alone (EXPLAIN ANALYZE, by day × model):\n${plan.map((r) => `  ${r['QUERY PLAN']}`).join('\n')}`,
);
console.log(
  `\nheadline: 30-day by-day-by-model query over ${N} generations: p50 ${headline.toFixed(1)} ms (target ≤ 100 ms)`,
);

await db.end();
await billing.close();
await redis.cleanup();
if (values.keep) console.log(`kept: ${database.url} (account ${account})`);
else await database.drop();
