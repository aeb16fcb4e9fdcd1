/**
 * Issue 31: the end-to-end suites run with 1 usage partition (the `default` project) and with 2 (the
 * `usage-partitions` project, TOLLGATE_TEST_USAGE_PARTITIONS=2). This file proves which one this run
 * is on: the broker holds exactly this stack's partition queues (and not the other layout's), each
 * with billing consuming it, and accounts routed to every partition are billed exactly what their
 * answers said, each generation once.
 */
import { usagePartition, usageTopology } from '@tollgate/events';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  describeResponse,
  MODEL,
  type Stack,
  type StackAccount,
  startStack,
  testUsagePartitions,
} from '../support/stack';

const PARTITIONS = testUsagePartitions();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close(), 120_000);

/** Whether the queue exists, and its consumers and ready messages when it does. */
async function queueState(name: string): Promise<{ consumers: number; messages: number } | null> {
  const conn = await amqp.connect(stack.infra.amqp.url);
  try {
    const ch = await conn.createChannel();
    // checkQueue closes the channel with 404 when the queue does not exist.
    ch.on('error', () => {});
    const q = await ch.checkQueue(name).catch(() => null);
    return q ? { consumers: q.consumerCount, messages: q.messageCount } : null;
  } finally {
    await conn.close().catch(() => {});
  }
}

/** Accounts until every partition has one (an account's partition is a hash of its id). */
async function accountPerPartition(): Promise<StackAccount[]> {
  const byPartition = new Map<number, StackAccount>();
  for (let i = 0; byPartition.size < PARTITIONS; i++) {
    if (i > 64) throw new Error(`64 accounts did not cover ${PARTITIONS} partitions`);
    const account = await stack.createAccount({ credits: '5' });
    const p = usagePartition(account.id, PARTITIONS);
    if (!byPartition.has(p)) byPartition.set(p, account);
  }
  return [...byPartition.values()];
}

describe(`usage events through ${PARTITIONS} partition(s)`, () => {
  it('the broker has exactly this layout’s queues, each consumed by billing', async () => {
    const topology = usageTopology(stack.infra.amqp.prefix, PARTITIONS);
    for (const p of topology.partitions) {
      const state = await queueState(p.queue);
      expect(state, `${p.queue} exists`).not.toBeNull();
      expect(state?.consumers, `${p.queue} has billing's consumer`).toBeGreaterThanOrEqual(1);
    }
    // The other layout's queues were never declared: the setting reached the services.
    const other = usageTopology(stack.infra.amqp.prefix, PARTITIONS === 1 ? 2 : 1);
    for (const p of other.partitions) expect(await queueState(p.queue), p.queue).toBeNull();
  });

  it('accounts on every partition are billed what each answer said, each generation once', async () => {
    const accounts = await accountPerPartition();
    for (const account of accounts) {
      const { key } = await stack.createInferenceKey(account.managementKey);
      const costs: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await stack.api('/chat/completions', {
          key,
          body: { model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: `partition ${i}` }] },
        });
        expect(res.status, describeResponse(res)).toBe(200);
        const record = await stack.waitForGeneration(res.body.id, key);
        expect(record.status, describeResponse(record)).toBe(200);
        expect(record.body.data.total_cost).toBe(res.body.usage.cost);
        costs.push(Number(res.body.usage.cost));
      }
      const spent = costs.reduce((a, b) => a + b, 0);
      expect(spent).toBeGreaterThan(0);
      await vi.waitFor(
        async () => {
          const credits = await stack.api('/credits', { key: account.managementKey });
          expect(credits.status, describeResponse(credits)).toBe(200);
          expect(credits.body.data.total_usage).toBeCloseTo(spent, 12);
        },
        { timeout: 15_000, interval: 100 },
      );
    }
    const topology = usageTopology(stack.infra.amqp.prefix, PARTITIONS);
    for (const p of topology.partitions) expect((await queueState(p.queue))?.messages, p.queue).toBe(0);
  });
});
