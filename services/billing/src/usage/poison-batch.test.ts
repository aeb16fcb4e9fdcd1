import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';

let s: TestBillingStack;
beforeAll(async () => {
  s = await startTestBilling();
});
afterAll(async () => {
  await s.cleanup();
});

const recorded = async (ids: string[]) =>
  (await s.billing.db.selectFrom('billing.generations').select('id').where('id', 'in', ids).execute()).map(
    (r) => r.id,
  );
const accountUsage = async (accountId: string) =>
  (
    await s.billing.db
      .selectFrom('billing.account_usage')
      .select('amount')
      .where('account_id', '=', accountId)
      .executeTakeFirst()
  )?.amount;
async function depth(queue: string) {
  const conn = await amqp.connect(s.config.AMQP_URL);
  try {
    return (await (await conn.createChannel()).checkQueue(queue)).messageCount;
  } finally {
    await conn.close();
  }
}

describe('billing worker: a poison event in a batch (issue 14 finding 2)', () => {
  it('records every other event of the batch through the real database and dead-letters only the one Postgres rejects', async () => {
    await s.billing.consumer?.close(); // publish first: the ten events then arrive as one batch
    const accountId = randomUUID();
    const good = Array.from({ length: 9 }, () => usageEvent({ account_id: accountId, cost: '0.25' }));
    // Valid by the event schema, but no Postgres timestamptz (there is no year 0): the insert fails
    // with a data exception (SQLSTATE 22008), which is permanent for this event alone.
    const poison = usageEvent({ account_id: accountId, started_at: '0000-01-01T00:00:00.000Z' });
    await s.publish(...good.slice(0, 4), poison, ...good.slice(4));
    const billing = await s.restart();
    await vi.waitFor(async () => expect(await recorded(good.map((e) => e.id))).toHaveLength(9), {
      timeout: 15_000,
    });
    await vi.waitFor(() => expect(billing.consumer?.stats().deadLettered).toBe(1), { timeout: 15_000 });
    expect(await recorded([poison.id])).toEqual([]);
    expect(billing.consumer?.stats().transientRetries).toBe(0);
    expect(await accountUsage(accountId)).toBe('2.25');
    await vi.waitFor(async () => expect(await depth(s.topology.deadLetterQueue)).toBe(1));
    for (const { queue } of s.topology.partitions) expect(await depth(queue)).toBe(0);
  });
});
