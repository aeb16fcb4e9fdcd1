import type { UsageEvent } from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import { periodKey, SCALE, toDecimal, toUnits } from '@tollgate/money';
import type { CommittedAccount, CommittedKey, SpendStore } from '@tollgate/spend';
import { addUsageRollups } from '../analytics/usage-rollup';
import type { BillingDb } from '../database';
import { insertGenerations } from '../generations/generations.repository';
import type { NewGeneration } from '../generations/generations.table';
import {
  accountUsageTotals,
  addAccountUsage,
  addKeySpend,
  type KeySpendDelta,
  keySpendTotals,
} from '../spend/spend.repository';

/** The four spend periods an event counts towards, by its `finished_at` (UTC). */
const periodsOf = (finishedAt: Date): string[] => [
  periodKey('daily', finishedAt),
  periodKey('weekly', finishedAt),
  periodKey('monthly', finishedAt),
  periodKey(null, finishedAt),
];

/** Cost in units; more than 10 decimals (never sent by the proxy) is rounded up, never down. */
function costUnits(cost: string): bigint {
  const [int = '0', frac = ''] = cost.split('.');
  if (frac.length <= SCALE) return toUnits(cost);
  const kept = toUnits(`${int}.${frac.slice(0, SCALE)}`);
  return /[1-9]/.test(frac.slice(SCALE)) ? kept + 1n : kept;
}

function toGenerationRow(e: UsageEvent): NewGeneration {
  return {
    id: e.id,
    account_id: e.account_id,
    key_id: e.key_id,
    model: e.model,
    provider_name: e.provider_name,
    upstream_model: e.upstream_model,
    upstream_id: e.upstream_id,
    app: e.app,
    http_referer: e.http_referer ?? null,
    streamed: e.streamed,
    cancelled: e.cancelled,
    finish_reason: e.finish_reason,
    tokens_prompt: e.tokens.prompt,
    tokens_completion: e.tokens.completion,
    tokens_cached: e.tokens.cached,
    tokens_cache_write: e.tokens.cache_write,
    tokens_reasoning: e.tokens.reasoning,
    total_cost: toDecimal(costUnits(e.cost)),
    is_byok: e.is_byok,
    usage_source: e.usage_source,
    latency_ms: e.latency_ms,
    generation_time_ms: e.generation_time_ms,
    error: e.error ? JSON.stringify(e.error) : null,
    attempts: JSON.stringify(e.attempts ?? []),
    created_at: e.started_at,
    finished_at: e.finished_at,
  };
}

interface RecordResult {
  /** Events recorded by this call (the others were already recorded: redelivery or duplicate). */
  inserted: number;
  duplicates: number;
}

export interface UsageRecorder {
  record(events: UsageEvent[]): Promise<RecordResult>;
}

export interface UsageRecorderDeps {
  db: BillingDb;
  spend: SpendStore;
  logger: Logger;
  clock: () => Date;
  /** Attempts at the Redis update after commit before giving up on it (it heals anyway). */
  redisAttempts?: number;
}

/**
 * Writes a batch of usage events exactly once. One transaction: multi-row insert of the records
 * (`on conflict (id) do nothing returning id`), then ONE upsert adding the newly inserted rows' costs
 * to every distinct (key, period) and one to every distinct account. After the commit the Redis
 * counters are raised to the committed Postgres totals (a monotonic max, so order and repetition do
 * not matter) for every key and account of the batch, duplicates included: a worker killed between
 * commit and Redis update gets the batch again, inserts nothing, and still brings Redis up to date.
 * The caller acks the batch after this resolves.
 */
export function createUsageRecorder(deps: UsageRecorderDeps): UsageRecorder {
  const attempts = deps.redisAttempts ?? 4;
  const log = deps.logger.child({ component: 'usage-recorder' });

  return {
    async record(batch) {
      const seen = new Set<string>();
      const events = batch.filter((e) => !seen.has(e.id) && seen.add(e.id));
      if (events.length === 0) return { inserted: 0, duplicates: 0 };
      const rows = events.map(toGenerationRow);

      const { keys, accounts, inserted } = await deps.db.transaction().execute(async (trx) => {
        const insertedIds = new Set(await insertGenerations(trx, rows));
        await addUsageRollups(
          trx,
          rows.filter((r) => insertedIds.has(r.id)),
        );

        const keyDeltas = new Map<string, KeySpendDelta & { units: bigint }>();
        const accountDeltas = new Map<string, bigint>();
        const touchedPairs = new Map<string, { keyId: string; period: string }>();
        for (const e of events) {
          const periods = periodsOf(new Date(e.finished_at));
          for (const period of periods)
            touchedPairs.set(`${e.key_id}|${period}`, { keyId: e.key_id, period });
          if (!insertedIds.has(e.id)) continue;
          const units = costUnits(e.cost);
          if (units === 0n) continue;
          for (const period of periods) {
            const id = `${e.key_id}|${period}`;
            const d = keyDeltas.get(id) ?? {
              keyId: e.key_id,
              accountId: e.account_id,
              period,
              amount: '0',
              units: 0n,
            };
            d.units += units;
            keyDeltas.set(id, d);
          }
          accountDeltas.set(e.account_id, (accountDeltas.get(e.account_id) ?? 0n) + units);
        }

        // Same lock order in every worker: sorted by key id then period, accounts by id.
        const sortedKeyDeltas = [...keyDeltas.values()]
          .sort((a, b) => (a.keyId === b.keyId ? cmp(a.period, b.period) : cmp(a.keyId, b.keyId)))
          .map((d) => ({ ...d, amount: toDecimal(d.units) }));
        const sortedAccountDeltas = [...accountDeltas.entries()]
          .sort(([a], [b]) => cmp(a, b))
          .map(([accountId, units]) => ({ accountId, amount: toDecimal(units) }));

        const keyTotals = new Map<string, bigint>();
        for (const r of await addKeySpend(trx, sortedKeyDeltas))
          keyTotals.set(`${r.key_id}|${r.period}`, toUnits(r.amount));
        const accountTotals = new Map<string, bigint>();
        for (const r of await addAccountUsage(trx, sortedAccountDeltas))
          accountTotals.set(r.account_id, toUnits(r.amount));

        // Pairs and accounts this batch touched without adding to them (duplicates, zero costs):
        // read their committed totals so Redis is refreshed for them too.
        const missingPairs = [...touchedPairs.entries()]
          .filter(([id]) => !keyTotals.has(id))
          .map(([, p]) => p);
        for (const r of await keySpendTotals(trx, missingPairs))
          keyTotals.set(`${r.key_id}|${r.period}`, toUnits(r.amount));
        const accountIds = [...new Set(events.map((e) => e.account_id))];
        const missingAccounts = accountIds.filter((a) => !accountTotals.has(a));
        for (const r of await accountUsageTotals(trx, missingAccounts))
          accountTotals.set(r.account_id, toUnits(r.amount));

        const byKey = new Map<string, CommittedKey>();
        for (const e of events) {
          const k = byKey.get(e.key_id) ?? { keyId: e.key_id, totals: [], requestIds: [] };
          k.requestIds.push(e.id);
          byKey.set(e.key_id, k);
        }
        for (const [id, { keyId, period }] of touchedPairs) {
          byKey.get(keyId)?.totals.push([period, keyTotals.get(id) ?? 0n]);
        }
        const byAccount = new Map<string, CommittedAccount>();
        for (const e of events) {
          const a = byAccount.get(e.account_id) ?? {
            accountId: e.account_id,
            usageUnits: accountTotals.get(e.account_id) ?? 0n,
            requestIds: [],
          };
          a.requestIds.push(e.id);
          byAccount.set(e.account_id, a);
        }
        return { keys: [...byKey.values()], accounts: [...byAccount.values()], inserted: insertedIds.size };
      });

      await updateRedis(keys, accounts);
      return { inserted, duplicates: events.length - inserted };
    },
  };

  async function updateRedis(keys: CommittedKey[], accounts: CommittedAccount[]) {
    for (let attempt = 1; ; attempt++) {
      try {
        await deps.spend.applyCommitted(deps.clock().getTime(), keys, accounts);
        return;
      } catch (err) {
        if (attempt >= attempts) {
          // Postgres holds the truth; the counters heal on the next event of each key/account,
          // on the guard's periodic refresh, or are rebuilt when missing. Never re-bill to fix them.
          log.error(
            { err, keys: keys.length, accounts: accounts.length },
            'spend counters not updated in Redis after commit',
          );
          return;
        }
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      }
    }
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
