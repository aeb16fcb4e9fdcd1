import { randomUUID } from 'node:crypto';
import { createLogger } from '@tollgate/logger';
import { periodKey, toUnits } from '@tollgate/money';
import { createSpendStore, spendAccountHash, spendKeyHash } from '@tollgate/spend';
import { createTcpProxy, hostPortOf } from '@tollgate/testkit';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';
import { createBillingDb } from '../database';
import { classifyBillingFailure } from './failure';
import { createUsageRecorder } from './usage.recorder';

let s: TestBillingStack;
beforeAll(async () => {
  s = await startTestBilling();
  await s.billing.consumer?.close(); // the recorder is driven directly here
});
afterAll(async () => {
  await s.cleanup();
});

const record = (id: string) =>
  s.billing.db.selectFrom('billing.generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const spend = async (keyId: string) =>
  Object.fromEntries(
    (
      await s.billing.db
        .selectFrom('billing.key_spend')
        .select(['period', 'amount'])
        .where('key_id', '=', keyId)
        .execute()
    ).map((r) => [r.period, r.amount]),
  );

describe('usage recorder (one array parameter per column, sums per batch)', () => {
  it('stores every value exactly, whatever characters the provider text holds', async () => {
    const awkward = [
      'quote " and backslash \\ and \\" both',
      '{braces},commas, and "NULL"',
      'NULL',
      '',
      '  spaces  \t tab\nnewline',
      'emoji 😀 accents éà, CJK 漢字',
      '\\',
      '"',
    ];
    const events = awkward.map((text, i) =>
      usageEvent({
        app: text,
        finish_reason: text,
        upstream_id: i % 2 === 0 ? text : null,
        http_referer: i % 3 === 0 ? text : null,
        model: `m${text}`,
        error: { code: 500 + i, message: `${text} {"json": [1, "\\u0041"]}` },
        attempts: [
          { provider: `p${text}`, model: 'x', status: i % 2 ? null : 503, outcome: text, latency_ms: i },
        ],
        tokens: { prompt: 2 ** 53 - 1, completion: i, cached: 0, cache_write: 1, reasoning: 2 },
        cost: '0.0000000001',
      }),
    );
    const r = await s.billing.recorder.record(events);
    expect(r).toEqual({ inserted: events.length, duplicates: 0 });
    for (const e of events) {
      const row = await record(e.id);
      expect(row).toMatchObject({
        app: e.app,
        finish_reason: e.finish_reason,
        upstream_id: e.upstream_id,
        http_referer: e.http_referer,
        model: e.model,
        error: e.error,
        attempts: e.attempts,
        tokens_prompt: String(2 ** 53 - 1),
        tokens_completion: String(e.tokens.completion),
        total_cost: '0.0000000001',
      });
      expect(row.created_at.toISOString()).toBe(e.started_at);
    }
  });

  it('sums a batch per (key, period), per account and per roll-up row, duplicates and zero costs included', async () => {
    const accountId = randomUUID();
    const [k1, k2] = [randomUUID(), randomUUID()];
    const at = (iso: string, keyId: string, cost: string) =>
      usageEvent({ account_id: accountId, key_id: keyId, cost, finished_at: iso, started_at: iso });
    // Two days of one ISO week (Sunday 2026-11-22 is in W47, Monday 2026-11-23 in W48), two keys.
    const first = [
      at('2026-11-22T23:59:59.999Z', k1, '0.1'),
      at('2026-11-23T00:00:00.000Z', k1, '0.2'),
      at('2026-11-23T10:00:00.000Z', k1, '0'),
      at('2026-11-23T10:30:00.000Z', k2, '0.04'),
    ];
    expect(await s.billing.recorder.record(first)).toEqual({ inserted: 4, duplicates: 0 });
    // Redelivered with one new event: only the new one counts.
    const again = [...first, at('2026-11-23T11:00:00.000Z', k2, '0.01')];
    expect(await s.billing.recorder.record(again)).toEqual({ inserted: 1, duplicates: 4 });

    expect(await spend(k1)).toEqual({
      'd2026-11-22': '0.1',
      'd2026-11-23': '0.2',
      'w2026-W47': '0.1',
      'w2026-W48': '0.2',
      'm2026-11': '0.3',
      all: '0.3',
    });
    expect(await spend(k2)).toEqual({
      'd2026-11-23': '0.05',
      'w2026-W48': '0.05',
      'm2026-11': '0.05',
      all: '0.05',
    });
    const usage = await s.billing.db
      .selectFrom('billing.account_usage')
      .select('amount')
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(usage.amount).toBe('0.35');
    const hourly = await s.billing.db
      .selectFrom('billing.usage_hourly')
      .select(['hour', 'key_id', 'requests', 'cost', 'tokens_prompt'])
      .where('account_id', '=', accountId)
      .execute();
    const hours = hourly
      .map((h) => [h.hour.toISOString(), h.key_id === k1 ? 'k1' : 'k2', h.requests, h.cost])
      .sort((a, b) => (`${a[0]}${a[1]}` < `${b[0]}${b[1]}` ? -1 : 1));
    expect(hours).toEqual([
      ['2026-11-22T23:00:00.000Z', 'k1', '1', '0.1'],
      ['2026-11-23T00:00:00.000Z', 'k1', '1', '0.2'],
      ['2026-11-23T10:00:00.000Z', 'k1', '1', '0'],
      ['2026-11-23T10:00:00.000Z', 'k2', '1', '0.04'],
      ['2026-11-23T11:00:00.000Z', 'k2', '1', '0.01'],
    ]);
    const daily = await s.billing.db
      .selectFrom('billing.usage_daily')
      .select(['key_id', 'requests', 'cost'])
      .where('account_id', '=', accountId)
      .where('day', '=', '2026-11-23' as never)
      .orderBy('key_id')
      .execute();
    expect(
      Object.fromEntries(daily.map((d) => [d.key_id === k1 ? 'k1' : 'k2', [d.requests, d.cost]])),
    ).toEqual({
      k1: ['2', '0.2'],
      k2: ['2', '0.05'],
    });
  });

  it('an event twice in one batch (a publisher retry) is recorded and charged once, as first sent', async () => {
    const accountId = randomUUID();
    const keyId = randomUUID();
    const e = usageEvent({ account_id: accountId, key_id: keyId, cost: '0.25' });
    const other = usageEvent({ account_id: accountId, key_id: keyId, cost: '0.5' });
    const r = await s.billing.recorder.record([e, other, { ...e, cost: '7' }]);
    expect(r).toEqual({ inserted: 2, duplicates: 0 });
    expect((await record(e.id)).total_cost).toBe('0.25');
    expect((await spend(keyId)).all).toBe('0.75');
  });

  it('two batches written at once that share events (a redelivery) record and charge each once', async () => {
    const accountId = randomUUID();
    const keyId = randomUUID();
    const events = Array.from({ length: 60 }, () =>
      usageEvent({ account_id: accountId, key_id: keyId, cost: '0.01' }),
    );
    // Overlapping halves, in opposite orders: both transactions insert the shared ids.
    const a = events.slice(0, 40);
    const b = events.slice(20).reverse();
    const [ra, rb] = await Promise.all([s.billing.recorder.record(a), s.billing.recorder.record(b)]);
    expect(ra.inserted + rb.inserted).toBe(60);
    expect(ra.duplicates + rb.duplicates).toBe(20);
    expect((await spend(keyId)).all).toBe('0.6');
  });

  it('writes a batch with named prepared statements, prepared once per connection and reused', async () => {
    // One connection, so the statements it prepared are the ones pg_prepared_statements lists.
    const db = createBillingDb(s.config.DATABASE_URL, { max: 1 });
    const recorder = createUsageRecorder({
      db,
      spend: createSpendStore(s.redis.client, { prefix: s.config.REDIS_PREFIX }),
      logger: createLogger({ name: 't', level: 'silent' }),
      clock: () => new Date(),
    });
    try {
      const keyId = randomUUID();
      for (const cost of ['0.5', '0.25']) {
        expect(await recorder.record([usageEvent({ key_id: keyId, cost })])).toEqual({
          inserted: 1,
          duplicates: 0,
        });
      }
      expect(Object.values(await spend(keyId))).toContain('0.75');
      const { rows } = await sql<{
        name: string;
      }>`select name from pg_prepared_statements order by name`.execute(db);
      // (No alert hook here: the alert endpoints read, prepared the same way, is not run.)
      expect(rows.map((r) => r.name)).toEqual(['billing_apply_batch_sums', 'billing_insert_generations']);
    } finally {
      await recorder.close();
      await db.destroy();
    }
  });

  it('a commit that cannot reach Redis is applied once Redis is back: pending costs cleared, counters raised', async () => {
    // Before: the update was dropped after four attempts (~0.7 s). After a Redis outage the request's
    // pending cost (p:) then stayed held for 7 days on top of the counter, which the key's next
    // commit raised to include it: the cost counted twice, the key refused below its limit.
    const keyId = randomUUID();
    const accountId = randomUUID();
    const now = new Date();
    const day = periodKey('daily', now);
    const current = { d: day, w: periodKey('weekly', now), m: periodKey('monthly', now) };
    const direct = createSpendStore(s.redis.client, { prefix: s.config.REDIS_PREFIX });
    await direct.beginRebuild({ keyId, accountId }, now.getTime());
    await direct.loadKey(accountId, keyId, now.getTime(), current, []);
    await direct.loadAccount(accountId, now.getTime(), {
      usageUnits: 0n,
      creditsUnits: toUnits('100'),
      postpaid: false,
      version: 1,
    });
    const e = usageEvent({ key_id: keyId, account_id: accountId, cost: '2', finished_at: now.toISOString() });
    // The proxy settled the request: its cost is pending until billing counts it.
    await direct.admit({
      keyId,
      accountId,
      requestId: e.id,
      worstCaseUnits: toUnits('3'),
      limitUnits: toUnits('10'),
      period: day,
      now: now.getTime(),
    });
    await direct.settle({
      keyId,
      accountId,
      requestId: e.id,
      costUnits: toUnits('2'),
      keyTracked: true,
      accountTracked: true,
      now: now.getTime(),
    });
    const keyHash = spendKeyHash(s.config.REDIS_PREFIX, accountId, keyId);
    const acctHash = spendAccountHash(s.config.REDIS_PREFIX, accountId);
    expect(await s.redis.client.hget(keyHash, `p:${e.id}`)).not.toBeNull();

    // This recorder reaches Redis through a TCP fault proxy, which is then stopped: Redis unreachable.
    const proxy = await createTcpProxy(hostPortOf(s.config.REDIS_URL, 6379));
    const redis = new Redis(proxy.url(s.config.REDIS_URL), {
      maxRetriesPerRequest: 1,
      retryStrategy: () => 50,
    });
    redis.on('error', () => {});
    const recorder = createUsageRecorder({
      db: s.billing.db,
      spend: createSpendStore(redis, { prefix: s.config.REDIS_PREFIX }),
      logger: createLogger({ name: 't', level: 'silent' }),
      clock: () => new Date(),
      redisAttempts: 2,
      redisRetryMs: 50,
    });
    try {
      await proxy.stop();
      expect(await recorder.record([e])).toEqual({ inserted: 1, duplicates: 0 });
      expect((await spend(keyId))[day]).toBe('2'); // committed in Postgres, acked
      expect(recorder.redisBacklog()).toBe(2); // the key's and the account's update wait for Redis
      expect(await s.redis.client.hget(keyHash, `p:${e.id}`)).not.toBeNull();
      await proxy.start();
      await vi.waitFor(() => expect(recorder.redisBacklog()).toBe(0), { timeout: 10_000 });
      await vi.waitFor(async () => expect(await s.redis.client.hget(keyHash, `p:${e.id}`)).toBeNull(), {
        timeout: 10_000,
      });
      expect(await s.redis.client.hget(acctHash, `p:${e.id}`)).toBeNull();
      expect(await s.redis.client.hget(keyHash, day)).toBe(String(toUnits('2')));
      expect(await s.redis.client.hget(acctHash, 'usage')).toBe(String(toUnits('2')));
      expect(await s.redis.client.hget(keyHash, '_held')).toBe('0'); // counted once, not twice

      // Memory stays bounded: past the backlog's cap the batch is not acked (the error is transient,
      // so the consumer retries it in-process until Redis is back), its commit already in Postgres.
      const capped = createUsageRecorder({
        db: s.billing.db,
        spend: createSpendStore(redis, { prefix: s.config.REDIS_PREFIX }),
        logger: createLogger({ name: 't', level: 'silent' }),
        clock: () => new Date(),
        redisAttempts: 1,
        redisBacklogMax: 1,
      });
      await proxy.stop();
      const e2 = usageEvent({ key_id: keyId, account_id: accountId, cost: '1' });
      const err = await capped.record([e2]).then(
        () => null,
        (x: unknown) => x,
      );
      expect(err).not.toBeNull();
      expect(classifyBillingFailure(err)).toBe('transient');
      expect(capped.redisBacklog()).toBe(0);
      await proxy.start();
      await capped.close();
    } finally {
      await recorder.close();
      redis.disconnect();
      await proxy.close();
    }
  });
});
