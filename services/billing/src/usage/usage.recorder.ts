import { distinctEvents, type UsageEventV1 } from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import type { SpendStore } from '@tollgate/spend';
import type { ThresholdHook } from '../alerts/threshold-hook';
import { boundApps } from '../analytics/app-bound';
import { latencyRows } from '../analytics/latency-rollup';
import { rollupRows } from '../analytics/usage-rollup';
import type { BillingDb } from '../database';
import { insertBodies } from '../generations/bodies';
import { insertGenerations } from '../generations/generations.repository';
import { createGenerationPartitions, type GenerationPartitions } from '../generations/partitions';
import { periodsOf, spendSums, sumBatchSpend } from './batch-spend';
import { committedSpend } from './committed-spend';
import { costMemo } from './event-cost';
import { toGenerationRow } from './generation-row';
import { createSpendSync } from './spend-sync';
import { teamBatch } from './team-spend';
import { applyBatchSums, type BatchSums } from './usage.repository';

interface RecordResult {
  /** Events recorded by this call (the others were already recorded: redelivery or duplicate). */
  inserted: number;
  duplicates: number;
}

export interface UsageRecorder {
  record(events: UsageEventV1[]): Promise<RecordResult>;
  /** Redis updates still waiting for Redis (see `redisBacklog`): one more try, then the retry timer stops. */
  close(): Promise<void>;
  /** Request ids whose Redis update waits for Redis to come back (a gauge for tests and logs). */
  redisBacklog(): number;
}

export interface UsageRecorderDeps {
  db: BillingDb;
  spend: SpendStore;
  logger: Logger;
  clock: () => Date;
  /** Attempts at the Redis update after commit before it is left to the backlog's retries. */
  redisAttempts?: number;
  /** How often the updates waiting for Redis are tried again (default 500 ms). */
  redisRetryMs?: number;
  /** Most request ids waiting for Redis (default 200,000; spend-sync.ts). */
  redisBacklogMax?: number;
  /** Distinct X-Titles per account and UTC day with roll-up rows of their own (default 200; the rest: `(other)`). */
  appsPerDay?: number;
  /** The monthly partitions of `billing.generations` (default: created on demand, kept forever). */
  partitions?: GenerationPartitions;
  /** Spend/credit threshold alerts, decided in the commit's transaction (alerts/threshold-hook.ts). */
  alerts?: ThresholdHook;
}

/**
 * Writes a batch of usage events exactly once. One transaction of two statements: the insert of the
 * records (one array parameter per column, `on conflict (id, created_at) do nothing returning id`), then ONE
 * statement adding the newly inserted rows (summed in memory per row of each table: batch-spend.ts,
 * analytics/usage-rollup.ts) to the hourly and daily roll-ups, to every distinct (key, period) and to
 * every distinct account. After the commit the Redis counters are raised to the committed Postgres
 * totals (committed-spend.ts, spend-sync.ts; a monotonic max, so order and repetition do not matter)
 * for every key and account of the batch, duplicates included: a worker killed between commit and
 * Redis update gets the batch again, inserts nothing, and still brings Redis up to date. The caller
 * acks the batch after this resolves.
 */
export function createUsageRecorder(deps: UsageRecorderDeps): UsageRecorder {
  const sync = createSpendSync({
    spend: deps.spend,
    clock: deps.clock,
    log: deps.logger.child({ component: 'usage-recorder' }),
    attempts: deps.redisAttempts,
    retryMs: deps.redisRetryMs,
    backlogMax: deps.redisBacklogMax,
  });
  const partitions = deps.partitions ?? createGenerationPartitions(deps.db);

  return {
    redisBacklog: () => sync.backlog(),
    close: () => sync.close(),

    async record(batch) {
      // The first of each id, in id order: the lock order of every batch (@tollgate/events distinct-events).
      const events = distinctEvents(batch, 'id');
      if (events.length === 0) return { inserted: 0, duplicates: 0 };
      const cost = costMemo();
      const units: bigint[] = [];
      const rows = events.map((e) => {
        const c = cost(e.cost);
        units.push(c.units);
        return toGenerationRow(e, c.decimal);
      });

      // A month without a partition yet gets one first (a map lookup when it exists).
      await partitions.ensureFor(rows.map((r) => r.created_at));
      const alertPlan = (await deps.alerts?.prepare(deps.db, events)) ?? null;
      const { committed, inserted } = await deps.db.transaction().execute(async (trx) => {
        const insertedIds = new Set(await insertGenerations(trx, rows));
        // Opt-in bodies (issue 28) of the records just inserted, in the same transaction.
        await insertBodies(trx, events, insertedIds);
        const spend = sumBatchSpend(events, rows, units, insertedIds);
        // Same lock order in every worker: roll-ups by primary key, spend by key id then period,
        // accounts by id. Titles past the account's share of the day roll up as "(other)"
        // (analytics/app-bound.ts).
        const rolled = await boundApps(trx, spend.newRecords, deps.appsPerDay ?? 200);
        const byDay = new Map<string, string[]>();
        const teams = teamBatch(events, insertedIds, units, (day) => periodsOf(day, byDay));
        const sums: BatchSums = {
          teamSpend: teams.spend,
          readTeamSpend: teams.read,
          hourly: rollupRows(rolled, 'hour'),
          daily: rollupRows(rolled, 'day'),
          latencyHourly: latencyRows(rolled, 'hour'),
          latencyDaily: latencyRows(rolled, 'day'),
          ...spendSums(spend),
        };
        const totals = await applyBatchSums(trx, sums);
        await deps.alerts?.decide(trx, alertPlan, sums, totals);
        const committed = committedSpend(events, spend.touchedPairs, totals);
        committed.keys.push(...teams.committed(totals.teams));
        return { committed, inserted: insertedIds.size };
      });

      await sync.afterCommit(committed.keys, committed.accounts);
      return { inserted, duplicates: events.length - inserted };
    },
  };
}
