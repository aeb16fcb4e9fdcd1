import { randomUUID } from 'node:crypto';
import { createLogger } from '@tollgate/logger';
import { serveMetrics } from '@tollgate/metrics';
import { createTcpProxy, hostPortOf } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';
import { startBilling } from '../service';

/**
 * Issue 31: a usage partition's backlog and lag are metrics. Two partitions, events waiting on both,
 * a worker whose Postgres is unreachable (it holds one event per partition, prefetch 1): each
 * partition's backlog is what waits in its queue, its lag the age of the event held; once Postgres
 * is back, every event is recorded and both fall to 0.
 */
let s: TestBillingStack;

beforeAll(async () => {
  s = await startTestBilling({ USAGE_PARTITIONS: '2' });
});
afterAll(async () => {
  await s?.cleanup();
});

const onPartition = (i: number) => {
  for (;;) {
    const account = randomUUID();
    if (s.partitionOf(account) === i) return account;
  }
};

/** `name{…partition="<p>"…} <value>` of each partition, from the exposition text. */
function gauge(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = line.match(new RegExp(`^${name}\\{[^}]*partition="(\\d+)"[^}]*\\} (\\S+)$`));
    if (m?.[1] !== undefined) out[m[1]] = Number(m[2]);
  }
  return out;
}

describe('usage partition metrics', () => {
  it('shows each partition backlog and lag while its events wait, and 0 once they are recorded', async () => {
    await s.billing.consumer?.close();
    const a0 = onPartition(0);
    const a1 = onPartition(1);
    const events = [
      ...Array.from({ length: 3 }, () => usageEvent({ account_id: a0, cost: '0.25' })),
      ...Array.from({ length: 2 }, () => usageEvent({ account_id: a1, cost: '0.25' })),
    ];
    await s.publish(...events);
    const pgProxy = await createTcpProxy(hostPortOf(s.config.DATABASE_URL, 5432));
    const worker = await startBilling(
      {
        ...s.config,
        DATABASE_URL: pgProxy.url(s.config.DATABASE_URL),
        PORT: 0,
        PREFETCH: 1,
        BATCH_SIZE: 1,
        CONCURRENT_BATCHES: 1,
      },
      { logger: createLogger({ name: 't', level: 'silent' }) },
    );
    const listener = await serveMetrics({ registry: worker.metrics, port: 0, host: '127.0.0.1' });
    const read = async () => (await fetch(`${listener.url}/metrics`)).text();
    try {
      await worker.consumer!.ready();
      await pgProxy.stop();
      await vi.waitFor(
        async () => {
          const text = await read();
          expect(gauge(text, 'tollgate_billing_partition_backlog_messages')).toEqual({ '0': 2, '1': 1 });
          const lag = gauge(text, 'tollgate_billing_partition_lag_seconds');
          expect(lag['0']).toBeGreaterThan(0);
          expect(lag['1']).toBeGreaterThan(0);
          expect(gauge(text, 'tollgate_billing_partition_consuming')).toEqual({ '0': 1, '1': 1 });
        },
        { timeout: 20_000, interval: 200 },
      );
      await pgProxy.start();
      await vi.waitFor(() => expect(worker.consumer!.stats().handled).toBe(events.length), {
        timeout: 30_000,
      });
      const text = await read();
      expect(gauge(text, 'tollgate_billing_partition_backlog_messages')).toEqual({ '0': 0, '1': 0 });
      expect(gauge(text, 'tollgate_billing_partition_lag_seconds')).toEqual({ '0': 0, '1': 0 });
    } finally {
      await listener.close();
      await worker.close();
      await pgProxy.close();
      await s.restart();
    }
  }, 90_000);
});
