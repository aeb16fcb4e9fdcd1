import { createDb, migrateToLatest } from '@tollgate/db';
import { createTestDatabase, type TestDatabase } from '@tollgate/testkit';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations';

/**
 * The migrations that move the latency histograms out of the usage roll-ups (arrays) into
 * `latency_hourly`/`latency_daily` (bucket columns, no app) and add `usage_account_hourly`, run on
 * roll-ups written the old way: every request, error, sum and bucket count is there afterwards.
 */
const FIRST = '2026_11_27_120000_latency_rollups';
const account = '00000000-0000-4000-8000-000000000001';
const key = '00000000-0000-4000-9000-000000000001';

let test: TestDatabase;
let db: Kysely<unknown>;

/** A 25-bucket array (the old `ttft_hist`/`total_hist`) with the given counts per bucket. */
const hist = (counts: Record<number, number>) =>
  `{${Array.from({ length: 25 }, (_, k) => counts[k] ?? 0).join(',')}}`;

beforeAll(async () => {
  test = await createTestDatabase();
  db = createDb<unknown>(test.url, { max: 2 });
  const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < FIRST));
  await migrateToLatest(db, 'billing', before);
  // One hour, one model, two apps (rows the new tables merge) and a row from before the histograms.
  for (const [app, requests, errors, ttftHist, totalHist] of [
    ['a', 3, 1, hist({ 4: 3 }), hist({ 11: 3 })],
    ['b', 2, 0, hist({ 3: 1, 4: 1 }), hist({ 12: 2 })],
    ['c', 5, 0, '{}', '{}'],
  ] as const) {
    for (const [table, unit, at] of [
      ['usage_hourly', 'hour', '2026-11-20T10:00:00Z'],
      ['usage_daily', 'day', '2026-11-20'],
    ] as const) {
      await sql`
        insert into ${sql.table(`billing.${table}`)} (account_id, ${sql.ref(unit)}, key_id, model, app,
          provider_name, requests, tokens_prompt, tokens_completion, tokens_cached, tokens_cache_write,
          tokens_reasoning, cost, ttft_ms, total_ms, ttft_hist, total_hist, errors)
        values (${account}, ${at}, ${key}, 'openai/gpt-4o', ${app}, 'sim', ${requests}, 10, ${requests * 20},
          0, 0, 0, '0.25', ${requests * 100}, ${requests * 1000}, ${ttftHist}::bigint[], ${totalHist}::bigint[],
          ${errors})`.execute(db);
    }
  }
  await migrateToLatest(db, 'billing', migrations);
}, 120_000);

afterAll(async () => {
  await db?.destroy();
  await test?.drop();
});

describe('latency roll-ups migration', () => {
  it('merges the apps into one latency row per (hour|day, key, model, provider) with every bucket', async () => {
    for (const table of ['latency_hourly', 'latency_daily']) {
      const { rows } = await sql<Record<string, string>>`
        select requests::text, errors::text, tokens_completion::text, ttft_ms::text, total_ms::text,
          gen_ms::text, overhead_n::text, ttft_b03::text, ttft_b04::text, total_b11::text, total_b12::text
        from ${sql.table(`billing.${table}`)}`.execute(db);
      expect(rows, table).toEqual([
        {
          requests: '10',
          errors: '1',
          tokens_completion: '200',
          ttft_ms: '1000',
          total_ms: '10000',
          gen_ms: '9000',
          overhead_n: '0',
          ttft_b03: '1',
          ttft_b04: '4',
          total_b11: '3',
          total_b12: '2',
        },
      ]);
    }
  });

  it('drops the arrays from the usage roll-ups and sums each hour of the account', async () => {
    const { rows: columns } = await sql<{ column_name: string }>`
      select column_name from information_schema.columns
      where table_schema = 'billing' and table_name = 'usage_hourly' and column_name like '%_hist'`.execute(
      db,
    );
    expect(columns).toEqual([]);
    const { rows } = await sql<Record<string, string>>`
      select hour::text, requests::text, tokens_completion::text, cost::text, errors::text
      from billing.usage_account_hourly`.execute(db);
    expect(rows).toEqual([
      { hour: '2026-11-20 10:00:00+00', requests: '10', tokens_completion: '200', cost: '0.75', errors: '1' },
    ]);
  });

  it('sums each hour of the account per model, app, key and provider (usage_group_hourly)', async () => {
    const { rows } = await sql<Record<string, string>>`
      select dimension, value, hour::text, requests::text, tokens_completion::text, cost::text, errors::text
      from billing.usage_group_hourly order by dimension, value`.execute(db);
    const hour = '2026-11-20 10:00:00+00';
    const whole = { hour, requests: '10', tokens_completion: '200', cost: '0.75', errors: '1' };
    expect(rows).toEqual([
      {
        dimension: 'app',
        value: 'a',
        hour,
        requests: '3',
        tokens_completion: '60',
        cost: '0.25',
        errors: '1',
      },
      {
        dimension: 'app',
        value: 'b',
        hour,
        requests: '2',
        tokens_completion: '40',
        cost: '0.25',
        errors: '0',
      },
      {
        dimension: 'app',
        value: 'c',
        hour,
        requests: '5',
        tokens_completion: '100',
        cost: '0.25',
        errors: '0',
      },
      { dimension: 'key', value: key, ...whole },
      { dimension: 'model', value: 'openai/gpt-4o', ...whole },
      { dimension: 'provider', value: 'sim', ...whole },
    ]);
  });

  it('sums each hour of each key per model, app and provider (usage_key_group_hourly)', async () => {
    const { rows } = await sql<Record<string, string>>`
      select key_id::text, dimension, value, hour::text, requests::text, tokens_completion::text, cost::text,
        errors::text
      from billing.usage_key_group_hourly order by dimension, value`.execute(db);
    const hour = '2026-11-20 10:00:00+00';
    const whole = { key_id: key, hour, requests: '10', tokens_completion: '200', cost: '0.75', errors: '1' };
    const app = (value: string, requests: string, tokens: string, errors: string) => ({
      key_id: key,
      dimension: 'app',
      value,
      hour,
      requests,
      tokens_completion: tokens,
      cost: '0.25',
      errors,
    });
    expect(rows).toEqual([
      app('a', '3', '60', '1'),
      app('b', '2', '40', '0'),
      app('c', '5', '100', '0'),
      { dimension: 'model', value: 'openai/gpt-4o', ...whole },
      { dimension: 'provider', value: 'sim', ...whole },
    ]);
  });
});
