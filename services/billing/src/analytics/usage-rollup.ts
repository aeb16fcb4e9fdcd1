import { toDecimal, toUnits } from '@tollgate/money';
import { sql } from 'kysely';
import type { BillingDb } from '../database';
import type { NewGeneration } from '../generations/generations.table';

/** The hour (UTC) an event counts in: the hour of its `finished_at`, like the spend periods. */
export const hourOf = (finishedAt: Date | string): string => {
  const d = new Date(finishedAt);
  d.setUTCMinutes(0, 0, 0);
  return d.toISOString();
};

interface RollupDelta {
  account_id: string;
  hour: string;
  key_id: string;
  model: string;
  app: string;
  provider_name: string;
  requests: number;
  tokens_prompt: bigint;
  tokens_completion: bigint;
  tokens_cached: bigint;
  tokens_cache_write: bigint;
  tokens_reasoning: bigint;
  units: bigint;
}

/** Sums records into one delta per roll-up row, sorted by primary key (the same lock order everywhere). */
export function rollupDeltas(records: readonly NewGeneration[]): RollupDelta[] {
  const byRow = new Map<string, RollupDelta>();
  for (const e of records) {
    const hour = hourOf(e.finished_at);
    const app = e.app ?? '';
    const id = JSON.stringify([e.account_id, hour, e.key_id, e.model, app, e.provider_name]);
    let d = byRow.get(id);
    if (!d) {
      d = {
        account_id: e.account_id,
        hour,
        key_id: e.key_id,
        model: e.model,
        app,
        provider_name: e.provider_name,
        requests: 0,
        tokens_prompt: 0n,
        tokens_completion: 0n,
        tokens_cached: 0n,
        tokens_cache_write: 0n,
        tokens_reasoning: 0n,
        units: 0n,
      };
      byRow.set(id, d);
    }
    d.requests += 1;
    d.tokens_prompt += BigInt(e.tokens_prompt);
    d.tokens_completion += BigInt(e.tokens_completion);
    d.tokens_cached += BigInt(e.tokens_cached);
    d.tokens_cache_write += BigInt(e.tokens_cache_write);
    d.tokens_reasoning += BigInt(e.tokens_reasoning);
    d.units += toUnits(e.total_cost);
  }
  return [...byRow.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, d]) => d);
}

/**
 * Adds the newly recorded generation records (only those: the caller passes the rows its generation
 * insert actually inserted) to the hourly roll-ups, in the caller's transaction: one multi-row upsert.
 * A redelivered event inserts no generation row, so it never reaches here and is never counted twice.
 */
export async function addUsageRollups(trx: BillingDb, inserted: readonly NewGeneration[]): Promise<void> {
  const deltas = rollupDeltas(inserted);
  if (deltas.length === 0) return;
  await trx
    .insertInto('billing.usage_hourly')
    .values(
      deltas.map((d) => ({
        account_id: d.account_id,
        hour: d.hour,
        key_id: d.key_id,
        model: d.model,
        app: d.app,
        provider_name: d.provider_name,
        requests: d.requests,
        tokens_prompt: d.tokens_prompt.toString(),
        tokens_completion: d.tokens_completion.toString(),
        tokens_cached: d.tokens_cached.toString(),
        tokens_cache_write: d.tokens_cache_write.toString(),
        tokens_reasoning: d.tokens_reasoning.toString(),
        cost: toDecimal(d.units),
      })),
    )
    .onConflict((oc) =>
      oc.columns(['account_id', 'hour', 'key_id', 'model', 'app', 'provider_name']).doUpdateSet({
        requests: sql`billing.usage_hourly.requests + excluded.requests`,
        tokens_prompt: sql`billing.usage_hourly.tokens_prompt + excluded.tokens_prompt`,
        tokens_completion: sql`billing.usage_hourly.tokens_completion + excluded.tokens_completion`,
        tokens_cached: sql`billing.usage_hourly.tokens_cached + excluded.tokens_cached`,
        tokens_cache_write: sql`billing.usage_hourly.tokens_cache_write + excluded.tokens_cache_write`,
        tokens_reasoning: sql`billing.usage_hourly.tokens_reasoning + excluded.tokens_reasoning`,
        cost: sql`billing.usage_hourly.cost + excluded.cost`,
      }),
    )
    .execute();
}
