import { toDecimal, toUnits } from '@tollgate/money';
import { sql } from 'kysely';
import type { BillingDb } from '../database';
import type { NewGeneration } from '../generations/generations.table';

/** The UTC hour a record counts in: the hour of its `finished_at`, like the spend periods. */
const hourOf = (finishedAt: Date | string): string => {
  const d = new Date(finishedAt);
  d.setUTCMinutes(0, 0, 0);
  return d.toISOString();
};

/** The UTC day ('YYYY-MM-DD') a record counts in. */
const dayOf = (finishedAt: Date | string): string => new Date(finishedAt).toISOString().slice(0, 10);

interface RollupDelta {
  account_id: string;
  bucket: string;
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

/**
 * Sums records into one delta per roll-up row of the given resolution, sorted by primary key (the
 * same lock order in every worker).
 */
function rollupDeltas(records: readonly NewGeneration[], resolution: 'hour' | 'day'): RollupDelta[] {
  const bucketOf = resolution === 'hour' ? hourOf : dayOf;
  const byRow = new Map<string, RollupDelta>();
  for (const e of records) {
    const bucket = bucketOf(e.finished_at as Date | string);
    const app = e.app ?? '';
    const id = JSON.stringify([e.account_id, bucket, e.key_id, e.model, app, e.provider_name]);
    let d = byRow.get(id);
    if (!d) {
      d = {
        account_id: e.account_id,
        bucket,
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

const sums = (d: RollupDelta) => ({
  account_id: d.account_id,
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
});

/** `col = table.col + excluded.col` for every summed column. */
const addExcluded = (table: 'usage_hourly' | 'usage_daily') =>
  Object.fromEntries(
    [
      'requests',
      'tokens_prompt',
      'tokens_completion',
      'tokens_cached',
      'tokens_cache_write',
      'tokens_reasoning',
      'cost',
    ].map((c) => [c, sql`${sql.ref(`billing.${table}.${c}`)} + ${sql.ref(`excluded.${c}`)}`]),
  );

/**
 * Adds the newly recorded generation records (only those: the caller passes the rows its generation
 * insert actually inserted) to the hourly and daily roll-ups, in the caller's transaction: one
 * multi-row upsert per table. A redelivered event inserts no generation row, so it never reaches
 * here and is never counted twice.
 */
export async function addUsageRollups(trx: BillingDb, inserted: readonly NewGeneration[]): Promise<void> {
  if (inserted.length === 0) return;
  const dims = ['account_id', 'key_id', 'model', 'app', 'provider_name'] as const;
  await trx
    .insertInto('billing.usage_hourly')
    .values(rollupDeltas(inserted, 'hour').map((d) => ({ ...sums(d), hour: d.bucket })))
    .onConflict((oc) => oc.columns(['hour', ...dims]).doUpdateSet(addExcluded('usage_hourly')))
    .execute();
  await trx
    .insertInto('billing.usage_daily')
    .values(rollupDeltas(inserted, 'day').map((d) => ({ ...sums(d), day: d.bucket })))
    .onConflict((oc) => oc.columns(['day', ...dims]).doUpdateSet(addExcluded('usage_daily')))
    .execute();
}
