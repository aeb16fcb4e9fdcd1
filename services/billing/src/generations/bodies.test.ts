import { randomUUID } from 'node:crypto';
import { createLogger } from '@tollgate/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceHeaders, startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';
import { createBodiesRetention } from './bodies';

/** Opt-in bodies (issue 28): stored with their generation records, exactly once, purged past the retention. */
const logger = createLogger({ name: 'test', level: 'silent' });

describe('generation bodies', () => {
  let s: TestBillingStack;
  const now = new Date('2026-11-26T12:00:00.000Z');
  const account = randomUUID();
  const at = (iso: string, bodies?: { prompt: string; answer: string; truncated: boolean }) =>
    usageEvent({ account_id: account, started_at: iso, finished_at: iso, ...(bodies ? { bodies } : {}) });
  const kept = {
    prompt: '{"messages":[{"role":"user","content":"hi [REDACTED]"}]}',
    answer: 'hello',
    truncated: false,
  };
  const recent = at('2026-11-25T08:00:00.000Z', kept);
  const old = at('2026-11-10T08:00:00.000Z', { ...kept, truncated: true });
  const none = at('2026-11-25T09:00:00.000Z');

  beforeAll(async () => {
    s = await startTestBilling({}, { clock: () => now });
  });
  afterAll(async () => {
    await s?.cleanup();
  });

  const bodiesOf = (id: string) =>
    s.billing.db
      .selectFrom('billing.generation_bodies')
      .select(['account_id', 'prompt', 'answer', 'truncated'])
      .where('id', '=', id)
      .execute();

  it('stores the bodies an event carries, once on redelivery, and nothing for an event without', async () => {
    await s.billing.recorder.record([recent, old, none]);
    const again = await s.billing.recorder.record([recent, old, none]);
    expect(again.inserted).toBe(0);
    expect(await bodiesOf(recent.id)).toEqual([{ account_id: account, ...kept }]);
    expect(await bodiesOf(old.id)).toEqual([{ account_id: account, ...kept, truncated: true }]);
    expect(await bodiesOf(none.id)).toEqual([]);
  });

  it('serves them to the account only, through the dashboard’s read of the generation', async () => {
    const read = async (acct: string) =>
      fetch(`${s.billing.url}/internal/accounts/${acct}/generations/${recent.id}`, {
        headers: await serviceHeaders('dashboard'),
      });
    const mine = await read(account);
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as { data: { bodies: unknown } }).data.bodies).toEqual(kept);
    expect((await read(randomUUID())).status).toBe(404);
  });

  it('purges the bodies past BODIES_RETENTION_DAYS and keeps the rest (and every generation record)', async () => {
    const retention = createBodiesRetention(s.billing.db, {
      retentionDays: 7,
      generationCutoff: () => null,
      clock: () => now,
      logger,
    });
    await retention.start(3_600_000);
    retention.stop();
    expect(retention.cutoff().toISOString()).toBe('2026-11-19T12:00:00.000Z');
    expect(await bodiesOf(old.id)).toEqual([]);
    expect(await bodiesOf(recent.id)).toHaveLength(1);
    const records = await s.billing.db
      .selectFrom('billing.generations')
      .select('id')
      .where('id', 'in', [old.id, recent.id])
      .execute();
    expect(records).toHaveLength(2);
  });

  it('never keeps bodies longer than the generation records when their retention is shorter', () => {
    const retention = createBodiesRetention(s.billing.db, {
      retentionDays: 30,
      generationCutoff: () => new Date('2026-11-20T00:00:00.000Z'),
      clock: () => now,
      logger,
    });
    expect(retention.cutoff().toISOString()).toBe('2026-11-20T00:00:00.000Z');
  });
});
