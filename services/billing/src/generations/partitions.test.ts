import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keyHeaders,
  serviceHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';
import { classifyBillingFailure } from '../usage/failure';
import {
  addMonths,
  createGenerationPartitions,
  listPartitions,
  monthOfPartition,
  monthStart,
  partitionName,
  requestIdSecond,
} from './partitions';

describe('month partition names', () => {
  it('names a month, reads it back, and ignores tables that are not ours', () => {
    const nov = monthStart(new Date('2026-11-26T23:59:59.999Z'));
    expect(nov.toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(partitionName(nov)).toBe('generations_p2026_11');
    expect(addMonths(nov, 2).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(monthOfPartition('generations_p2027_01')?.toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(monthOfPartition('generations_p2027_13')).toBeNull();
    expect(monthOfPartition('generations_unpartitioned')).toBeNull();
    expect(requestIdSecond('gen-1764000000-abcdefghijABCDEFGHIJ')).toBe(1764000000);
    expect(requestIdSecond('chatcmpl-1')).toBeNull();
  });
});

/** Billing with a 30-day retention, its clock on 2026-10-15, then 2026-11-26. */
describe('partitioned generation records with a retention', () => {
  let s: TestBillingStack;
  let now = new Date('2026-10-15T12:00:00.000Z');
  const account = randomUUID();
  const key = randomUUID();
  const at = (iso: string) =>
    usageEvent({ account_id: account, key_id: key, cost: '0.25', finished_at: iso });
  const september = at('2026-09-10T08:00:00.000Z');
  const october = at('2026-10-02T08:00:00.000Z');
  const november = at('2026-11-20T08:00:00.000Z');
  const old = at('2024-03-05T08:00:00.000Z');

  beforeAll(async () => {
    s = await startTestBilling({ GENERATION_RETENTION_DAYS: '30' }, { clock: () => now });
  });
  afterAll(async () => {
    await s?.cleanup();
  });

  const count = async (id: string) =>
    (
      await sql<{ n: number }>`select count(*)::int as n from billing.generations where id = ${id}`.execute(
        s.billing.db,
      )
    ).rows[0]?.n;
  const totals = async () =>
    (
      await sql<{ spend: string; usage: string; hourly: string; daily: string }>`
        select (select coalesce(sum(amount), 0)::text from billing.key_spend) as spend,
               (select coalesce(sum(amount), 0)::text from billing.account_usage) as usage,
               (select coalesce(sum(cost), 0)::text from billing.usage_hourly) as hourly,
               (select coalesce(sum(cost), 0)::text from billing.usage_daily) as daily`.execute(s.billing.db)
    ).rows[0];
  /**
   * Every billing table but the generation records (parent and month partitions), each as its row
   * count and a digest of its rows: "nothing else" of a dropped month, table by table.
   */
  const otherTables = async () => {
    const names = (
      await sql<{ name: string }>`
        select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where n.nspname = 'billing' and c.relkind in ('r', 'p') and c.relname not like 'generations%'
         order by 1`.execute(s.billing.db)
    ).rows.map((r) => r.name);
    const out: Record<string, string> = {};
    for (const name of names) {
      const t = sql.table(`billing.${name}`);
      const row = (
        await sql<{ n: string; digest: string | null }>`
          select count(*)::text as n, md5(string_agg(x::text, '|' order by x::text)) as digest
            from ${t} as x`.execute(s.billing.db)
      ).rows[0];
      out[name] = `${row?.n}:${row?.digest}`;
    }
    return out;
  };

  it('created the current month and three ahead at start', async () => {
    const names = (await listPartitions(s.billing.db)).map((p) => p.name);
    for (const m of [
      'generations_p2026_10',
      'generations_p2026_11',
      'generations_p2026_12',
      'generations_p2027_01',
    ]) {
      expect(names).toContain(m);
    }
  });

  it('records a month nobody created yet (a partition on demand), exactly once on redelivery', async () => {
    await s.billing.recorder.record([september, october, november]);
    const again = await s.billing.recorder.record([september, october, november]);
    expect(again.inserted).toBe(0);
    for (const e of [september, october, november]) expect(await count(e.id)).toBe(1);
    const names = (await listPartitions(s.billing.db)).map((p) => p.name);
    expect(names).toContain('generations_p2026_09');
  });

  it('drops the months wholly past the retention and nothing else', async () => {
    const before = await totals();
    const others = await otherTables();
    expect(Object.keys(others)).toEqual(
      expect.arrayContaining(['key_spend', 'account_usage', 'usage_hourly']),
    );
    now = new Date('2026-11-26T12:00:00.000Z');
    const { dropped } = await s.billing.partitions.maintain();
    // The cutoff is 2026-10-27: September ended before it; October ends after it and is kept.
    expect(dropped).toEqual(['generations_p2026_09']);
    expect(await count(september.id)).toBe(0);
    expect(await count(october.id)).toBe(1);
    expect(await count(november.id)).toBe(1);
    expect(await totals()).toEqual(before); // spend, usage and roll-ups are other tables
    expect(await otherTables()).toEqual(others); // every other table, row for row
    expect(before?.spend).not.toBe('0');
    expect((await s.billing.partitions.maintain()).dropped).toEqual([]);
  });

  it('never re-creates a dropped month: a record from it is refused (its event dead-lettered)', async () => {
    const err = await s.billing.recorder.record([old]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(classifyBillingFailure(err)).toBe('permanent');
    expect((await listPartitions(s.billing.db)).map((p) => p.name)).not.toContain('generations_p2024_03');
  });

  it('answers 404 for an expired record saying it was deleted by the retention', async () => {
    const caller = await fetch(`${s.billing.url}/internal/accounts/${account}/generations/${september.id}`, {
      headers: await serviceHeaders('dashboard'),
    });
    expect(caller.status).toBe(404);
    const body = (await caller.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/older than the retention/);
    const kept = await fetch(`${s.billing.url}/internal/accounts/${account}/generations/${october.id}`, {
      headers: await serviceHeaders('dashboard'),
    });
    expect(kept.status).toBe(200);
    // GET /generation?id= (the proxy forwards /api/v1/generation here): the caller's own 404 says so.
    const own = await fetch(`${s.billing.url}/generation?id=${september.id}`, {
      headers: await keyHeaders({ keyId: key, accountId: account }),
    });
    expect(own.status).toBe(404);
    expect(((await own.json()) as { error: { message: string } }).error.message).toMatch(
      /older than the retention of generation records \(GENERATION_RETENTION_DAYS\)/,
    );
    const unknown = await fetch(
      `${s.billing.url}/internal/accounts/${account}/generations/${usageEvent({ finished_at: november.finished_at }).id}`,
      { headers: await serviceHeaders('dashboard') },
    );
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(
      /not be recorded yet/,
    );
  });

  it('lets two replicas create the same missing month at once', async () => {
    const a = createGenerationPartitions(s.billing.db, { clock: () => now });
    const b = createGenerationPartitions(s.billing.db, { clock: () => now });
    const month = '2027-06-15T00:00:00.000Z';
    await Promise.all([a.ensureFor([month]), b.ensureFor([month]), a.maintain(), b.maintain()]);
    expect(
      (await listPartitions(s.billing.db)).filter((p) => p.name === 'generations_p2027_06'),
    ).toHaveLength(1);
  });
});
