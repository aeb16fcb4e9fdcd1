/**
 * Fault suite, usage partitions (issue 31): two partitions (USAGE_PARTITIONS=2), a worker per
 * partition plus a standby of both, and the active worker of partition 0 SIGKILLed mid-run. Every
 * request must be billed exactly once, and each account's records committed in publish order.
 * Runs with the fault suite: `pnpm exec vitest run --config tests/faults/vitest.config.ts tests/faults/partitions.test.ts`.
 */
import { usagePartition } from '@tollgate/events';
import { afterEach, describe, expect, it } from 'vitest';
import { expectBilledOnce } from './expect-billed';
import { FaultStack, type Outcome, report, sleep, stopService } from './harness';

let stack: FaultStack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

function backgroundLoad(s: FaultStack, concurrency: number, pauseMs: number) {
  let done = false;
  const running = s.load({ concurrency, pauseMs, until: () => done });
  return {
    stop(): Promise<Outcome[]> {
      done = true;
      return running;
    },
  };
}

/**
 * Per-account order: an account's records, in publish order (`finished_at`: the proxy publishes each
 * event as its request finishes), must have been committed in that order — the inserting
 * transaction's id (`xmin`) never goes down. With CONCURRENT_BATCHES=1 a partition's batches commit
 * one after the other, so only two consumers active on one partition at once (or a takeover that
 * skipped unacked messages) can break it. Returns the violations.
 */
async function orderViolations(s: FaultStack): Promise<string[]> {
  const rows = (
    await s.pool.query<{ id: string; account_id: string; finished_at: Date; xid: string }>(
      'select id, account_id, finished_at, xmin::text as xid from billing.generations',
    )
  ).rows;
  const byAccount = new Map<string, typeof rows>();
  for (const r of rows) byAccount.set(r.account_id, [...(byAccount.get(r.account_id) ?? []), r]);
  const violations: string[] = [];
  for (const [account, list] of byAccount) {
    list.sort((a, b) => a.finished_at.getTime() - b.finished_at.getTime());
    let latest: (typeof rows)[number] | null = null; // highest xid of an earlier finished_at
    for (let i = 0; i < list.length; i++) {
      const r = list[i] as (typeof rows)[number];
      if (latest && Number(r.xid) < Number(latest.xid) && r.finished_at > latest.finished_at)
        violations.push(
          `account ${account}: ${r.id} (xid ${r.xid}) committed before ${latest.id} (xid ${latest.xid})`,
        );
      if (!latest || Number(r.xid) > Number(latest.xid)) latest = r;
    }
  }
  return violations;
}

describe('fault suite: usage partitions', () => {
  it('7. two partitions, the active billing worker of one SIGKILLed mid-run: every request billed exactly once, per-account order kept', async () => {
    // billing[0] (the API the other services call) runs no worker: the workers are started apart.
    stack = new FaultStack({
      usagePartitions: 2,
      billingEnv: { WORKER_ENABLED: 'false', CONCURRENT_BATCHES: '1', BATCH_SIZE: '20', PREFETCH: '100' },
    });
    await stack.start();
    await stack.createKeys(12, '1000', 6);
    // Accounts on both partitions (6 random accounts miss one with probability 1/32: add more).
    while (new Set(stack.accounts.map((a) => usagePartition(a.id, 2))).size < 2)
      await stack.createKeys(2, '1000', 2);
    const worker = (partitions: string) =>
      stack!.startBilling({ WORKER_ENABLED: 'true', USAGE_WORKER_PARTITIONS: partitions });
    const p0 = await worker('0'); // active on partition 0
    await worker('1'); // active on partition 1
    await worker('all'); // the standby of both
    const load = backgroundLoad(stack, 6, 5);
    await sleep(4000);
    await stopService(p0, 'SIGKILL');
    const killedAt = Date.now();
    await sleep(3000);
    await worker('0'); // back, as the standby of partition 0 now
    await sleep(2000);
    const outcomes = await load.stop();
    const f = await stack.reconcile(outcomes, killedAt);
    const violations = await orderViolations(stack);
    report('2 usage partitions, active worker of partition 0 SIGKILLed', f);
    process.stdout.write(`[faults]   per-account order violations: ${violations.length}\n`);
    for (const v of violations.slice(0, 10)) process.stdout.write(`[faults]   ORDER ${v}\n`);
    expectBilledOnce(f, { minServed: 50 });
    expect(violations).toEqual([]);
  }, 240_000);
});
