import { createDb, migrateToLatest } from '@tollgate/db';
import { createTestDatabase, type TestDatabase } from '@tollgate/testkit';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations';
import type { Database } from '../database';
import { findGeneration } from './generations.repository';
import { listPartitions } from './partitions';

/**
 * The migration that partitions `billing.generations` by month, run on a copy of today's table
 * holding a million records over 15 months: every record, cent and index is there afterwards.
 */
const MIGRATION = '2026_11_27_090000_partition_generations';
const ROWS = 1_000_000;

let test: TestDatabase;
let db: Kysely<unknown>;

const fingerprint = async () =>
  (
    await sql<{ n: string; cost: string; tokens: string; ids: string; sessions: string; months: string }>`
      select count(*)::text as n, sum(total_cost)::text as cost, sum(tokens_prompt)::text as tokens,
             sum(hashtext(id)::bigint)::text as ids, count(session_id)::text as sessions,
             (select string_agg(m || ':' || c, ',' order by m) from (
                select to_char(created_at at time zone 'UTC', 'YYYY-MM') as m, count(*) as c
                  from billing.generations group by 1) per_month) as months
        from billing.generations`.execute(db)
  ).rows[0];

beforeAll(async () => {
  test = await createTestDatabase();
  db = createDb<unknown>(test.url, { max: 2 });
  const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < MIGRATION));
  await migrateToLatest(db, 'billing', before);
  await sql`
    insert into billing.generations (
      id, account_id, key_id, model, provider_name, upstream_model, upstream_id, app, session_id,
      streamed, cancelled, finish_reason, tokens_prompt, tokens_completion, tokens_cached,
      tokens_cache_write, tokens_reasoning, total_cost, is_byok, usage_source, latency_ms,
      generation_time_ms, created_at, finished_at)
    select 'gen-' || extract(epoch from t)::bigint || '-' || lpad(i::text, 20, '0'),
           ('00000000-0000-4000-8000-' || lpad((i % 20)::text, 12, '0'))::uuid,
           ('00000000-0000-4000-9000-' || lpad((i % 80)::text, 12, '0'))::uuid,
           'openai/gpt-4o-mini', 'sim', 'gpt-4o-mini', null, case when i % 3 = 0 then 'app' end,
           case when i % 10 = 0 then 'session-' || (i % 1000) end,
           i % 2 = 0, false, 'stop', 10 + i % 100, 20, 0, 0, 0, (i % 997) * 0.0000001, false,
           'provider', 100, 400, t, t + interval '1 second'
      from generate_series(1, ${ROWS}) as i, lateral (select timestamptz '2025-09-01' + i * interval '40 seconds' as t) at`.execute(
    db,
  );
}, 600_000);

afterAll(async () => {
  await db?.destroy();
  await test?.drop();
});

describe("partitioning today's generations table", () => {
  it('keeps every record, cent and index of a million rows', async () => {
    const before = await fingerprint();
    expect(before?.n).toBe(String(ROWS));
    const indexesBefore = (
      await sql<{ name: string }>`select indexname as name from pg_indexes
        where schemaname = 'billing' and tablename = 'generations' order by 1`.execute(db)
    ).rows.map((r) => r.name);

    const started = performance.now();
    const { applied } = await migrateToLatest(db, 'billing', migrations);
    const seconds = (performance.now() - started) / 1000;
    console.log(`partitioned ${ROWS} generation records in ${seconds.toFixed(1)} s`);
    expect(applied).toContain(MIGRATION);

    expect(await fingerprint()).toEqual(before);
    const kind = await sql<{ kind: string }>`select relkind::text as kind from pg_class c
      join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'billing' and c.relname = 'generations'`.execute(
      db,
    );
    expect(kind.rows[0]?.kind).toBe('p');
    const indexesAfter = (
      await sql<{ name: string }>`select indexname as name from pg_indexes
        where schemaname = 'billing' and tablename = 'generations' order by 1`.execute(db)
    ).rows.map((r) => r.name);
    expect(indexesAfter).toEqual(indexesBefore);
    const pk = await sql<{ def: string }>`select pg_get_constraintdef(oid) as def from pg_constraint
      where conrelid = 'billing.generations'::regclass and contype = 'p'`.execute(db);
    expect(pk.rows[0]?.def).toBe('PRIMARY KEY (id, created_at)');

    // 15 months of data (2025-09 … 2026-12) plus the months ahead of today.
    const months = (await listPartitions(db)).map((p) => p.name);
    expect(months[0]).toBe('generations_p2025_09');
    expect(months).toContain('generations_p2026_12');
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from billing.generations_p2025_09`.execute(db);
    expect(rows[0]?.n).toBeGreaterThan(0);
    const gone = await sql<{
      t: string | null;
    }>`select to_regclass('billing.generations_unpartitioned')::text as t`.execute(db);
    expect(gone.rows[0]?.t).toBeNull();
  }, 600_000);

  it('finds a record by id and still skips a redelivered one', async () => {
    const { rows } = await sql<{ id: string; created_at: Date }>`
      select id, created_at from billing.generations_p2026_03 limit 1`.execute(db);
    const row = rows[0]!;
    const found = await findGeneration(db as unknown as Kysely<Database>, row.id);
    expect(found?.id).toBe(row.id);
    const again = await sql`insert into billing.generations
        select * from billing.generations where id = ${row.id} and created_at = ${row.created_at}
        on conflict (id, created_at) do nothing`.execute(db);
    expect(Number(again.numAffectedRows ?? 0)).toBe(0);
  });
});
