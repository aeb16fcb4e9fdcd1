import type { UsageEventV1 } from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import { periodKey, SCALE, toDecimal, toUnits } from '@tollgate/money';
import type { CommittedAccount, CommittedKey, SpendStore } from '@tollgate/spend';
import type { ThresholdHook } from '../alerts/threshold-hook';
import { boundApps } from '../analytics/app-bound';
import { dayOf, rollupRows } from '../analytics/usage-rollup';
import type { BillingDb } from '../database';
import { type GenerationRow, insertGenerations } from '../generations/generations.repository';
import { createGenerationPartitions, type GenerationPartitions } from '../generations/partitions';
import { classifyBillingFailure } from './failure';
import { teamBatch } from './team-spend';
import { applyBatchSums, type BatchSums } from './usage.repository';

/** The four spend periods of a UTC day ('YYYY-MM-DD', the day of an event's `finished_at`). */
function periodsOf(day: string, byDay: Map<string, string[]>): string[] {
  let periods = byDay.get(day);
  if (!periods) {
    const at = new Date(`${day}T00:00:00.000Z`);
    periods = [
      periodKey('daily', at),
      periodKey('weekly', at),
      periodKey('monthly', at),
      periodKey(null, at),
    ];
    byDay.set(day, periods);
  }
  return periods;
}

/** Cost in units; more than 10 decimals (never sent by the proxy) is rounded up, never down. */
function costUnits(cost: string): bigint {
  const [int = '0', frac = ''] = cost.split('.');
  if (frac.length <= SCALE) return toUnits(cost);
  const kept = toUnits(`${int}.${frac.slice(0, SCALE)}`);
  return /[1-9]/.test(frac.slice(SCALE)) ? kept + 1n : kept;
}

/** An event's cost in units and as the normalised decimal recorded (memoised per batch). */
function costOf(cost: string, memo: Map<string, { units: bigint; decimal: string }>) {
  let c = memo.get(cost);
  if (!c) {
    const units = costUnits(cost);
    c = { units, decimal: toDecimal(units) };
    memo.set(cost, c);
  }
  return c;
}

function toGenerationRow(e: UsageEventV1, totalCost: string): GenerationRow {
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
    api_type: e.api_type ?? null,
    session_id: e.session_id ?? null,
    end_user: e.end_user ?? null,
    withheld_tools: e.withheld_tools && e.withheld_tools.length > 0 ? e.withheld_tools : null,
    streamed: e.streamed,
    cancelled: e.cancelled,
    finish_reason: e.finish_reason,
    tokens_prompt: e.tokens.prompt,
    tokens_completion: e.tokens.completion,
    tokens_cached: e.tokens.cached,
    tokens_cache_write: e.tokens.cache_write,
    tokens_reasoning: e.tokens.reasoning,
    total_cost: totalCost,
    is_byok: e.is_byok,
    usage_source: e.usage_source,
    latency_ms: e.latency_ms,
    generation_time_ms: e.generation_time_ms,
    error: e.error,
    attempts: e.attempts ?? [],
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
  record(events: UsageEventV1[]): Promise<RecordResult>;
  /** Redis updates still waiting for Redis (see `redisBacklog`): one more try, then the retry timer stops. */
  close(): Promise<void>;
  /** Request ids whose Redis update waits for Redis to come back (a gauge for tests and logs). */
  redisBacklog(): number;
}

/**
 * Most request ids kept waiting for Redis after their batches were committed and acked. Beyond, a
 * batch whose Redis update fails is not acked (the consumer retries it in-process until Redis is
 * back), so memory stays bounded however long Redis is away.
 */
const REDIS_BACKLOG_MAX = 200_000;

export interface UsageRecorderDeps {
  db: BillingDb;
  spend: SpendStore;
  logger: Logger;
  clock: () => Date;
  /** Attempts at the Redis update after commit before it is left to the backlog's retries. */
  redisAttempts?: number;
  /** How often the updates waiting for Redis are tried again (default 500 ms). */
  redisRetryMs?: number;
  /** Most request ids waiting for Redis (default REDIS_BACKLOG_MAX). */
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
 * records (one JSON parameter, `on conflict (id, created_at) do nothing returning id`), then ONE statement adding
 * the newly inserted rows (summed in memory per row of each table) to the hourly and daily roll-ups,
 * to every distinct (key, period) and to every distinct account. After the commit the Redis
 * counters are raised to the committed Postgres totals (a monotonic max, so order and repetition do
 * not matter) for every key and account of the batch, duplicates included: a worker killed between
 * commit and Redis update gets the batch again, inserts nothing, and still brings Redis up to date.
 * The caller acks the batch after this resolves.
 */
export function createUsageRecorder(deps: UsageRecorderDeps): UsageRecorder {
  const attempts = deps.redisAttempts ?? 4;
  const retryMs = deps.redisRetryMs ?? 500;
  const backlogMax = deps.redisBacklogMax ?? REDIS_BACKLOG_MAX;
  const log = deps.logger.child({ component: 'usage-recorder' });
  const partitions = deps.partitions ?? createGenerationPartitions(deps.db);

  /**
   * Redis updates of committed batches that could not reach Redis (unreachable): merged per key and
   * account (the highest committed totals, every request id) and tried again every `retryMs` until
   * Redis answers. Dropping them (as before) left Redis short of Postgres after an outage: the
   * pending costs (`p:`) of those requests stayed held for their 7-day TTL on top of the raised
   * counters (keys refused below their limit), and the counters stayed below Postgres until the
   * key's next commit. The batch itself is acked: Postgres has it, and billing keeps committing
   * while Redis is away (an admission after the outage rebuilds the hashes whose holds lapsed from
   * Postgres, so it must be up to date).
   */
  const backlogKeys = new Map<
    string,
    { totals: Map<string, bigint>; ids: Set<string>; teamOfAccount?: string }
  >();
  const backlogAccounts = new Map<string, { usage: bigint; ids: Set<string> }>();
  let backlogIds = 0;
  let retryTimer: NodeJS.Timeout | null = null;
  let retrying: Promise<void> | null = null;

  const addToBacklog = (keys: CommittedKey[], accounts: CommittedAccount[]) => {
    for (const k of keys) {
      let b = backlogKeys.get(k.keyId);
      if (!b) {
        b = { totals: new Map(), ids: new Set(), teamOfAccount: k.teamOfAccount };
        backlogKeys.set(k.keyId, b);
      }
      for (const [period, units] of k.totals) {
        const cur = b.totals.get(period);
        if (cur === undefined || units > cur) b.totals.set(period, units);
      }
      for (const id of k.requestIds) {
        if (b.ids.has(id)) continue;
        b.ids.add(id);
        backlogIds++;
      }
    }
    for (const a of accounts) {
      let b = backlogAccounts.get(a.accountId);
      if (!b) {
        b = { usage: a.usageUnits, ids: new Set() };
        backlogAccounts.set(a.accountId, b);
      }
      if (a.usageUnits > b.usage) b.usage = a.usageUnits;
      for (const id of a.requestIds) {
        if (b.ids.has(id)) continue;
        b.ids.add(id);
        backlogIds++;
      }
    }
  };
  const takeBacklog = () => {
    const keys: CommittedKey[] = [...backlogKeys].map(([keyId, b]) => ({
      keyId,
      ...(b.teamOfAccount ? { teamOfAccount: b.teamOfAccount } : {}),
      totals: [...b.totals],
      requestIds: [...b.ids],
    }));
    const accounts: CommittedAccount[] = [...backlogAccounts].map(([accountId, b]) => ({
      accountId,
      usageUnits: b.usage,
      requestIds: [...b.ids],
    }));
    backlogKeys.clear();
    backlogAccounts.clear();
    backlogIds = 0;
    return { keys, accounts };
  };
  const retryBacklog = (): Promise<void> => {
    retrying ??= (async () => {
      const { keys, accounts } = takeBacklog();
      if (keys.length + accounts.length === 0) return;
      try {
        await deps.spend.applyCommitted(deps.clock().getTime(), keys, accounts);
        log.info(
          { keys: keys.length, accounts: accounts.length },
          'spend counters updated in Redis after it returned',
        );
      } catch (err) {
        if (classifyBillingFailure(err) !== 'transient') {
          log.error(
            { err, keys: keys.length, accounts: accounts.length },
            'spend counters not updated in Redis after commit',
          );
          return;
        }
        addToBacklog(keys, accounts); // still away: merged with what failed meanwhile
      }
    })().finally(() => {
      retrying = null;
      if (backlogIds > 0 || backlogKeys.size + backlogAccounts.size > 0) scheduleRetry();
    });
    return retrying;
  };
  const scheduleRetry = () => {
    if (retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void retryBacklog();
    }, retryMs);
    retryTimer.unref();
  };

  return {
    redisBacklog: () => backlogIds,

    async close() {
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      await retrying;
      if (backlogKeys.size + backlogAccounts.size === 0) return;
      const { keys, accounts } = takeBacklog();
      try {
        await deps.spend.applyCommitted(deps.clock().getTime(), keys, accounts);
      } catch (err) {
        log.error(
          { err, keys: keys.length, accounts: accounts.length },
          'spend counters not updated in Redis after commit (stopping while Redis is away)',
        );
      }
    },

    async record(batch) {
      const seen = new Set<string>();
      const events = batch.filter((e) => !seen.has(e.id) && seen.add(e.id));
      if (events.length === 0) return { inserted: 0, duplicates: 0 };
      // Inserted in id order: two batches written at once (CONCURRENT_BATCHES) that share an id (a
      // redelivery) wait on each other's index entries in the same order, never in a cycle.
      events.sort((a, b) => cmp(a.id, b.id));
      const byDay = new Map<string, string[]>();
      const costs = new Map<string, { units: bigint; decimal: string }>();
      const units: bigint[] = [];
      const rows = events.map((e) => {
        const c = costOf(e.cost, costs);
        units.push(c.units);
        return toGenerationRow(e, c.decimal);
      });

      // A month without a partition yet gets one first (a map lookup when it exists).
      await partitions.ensureFor(rows.map((r) => r.created_at));
      const alertPlan = (await deps.alerts?.prepare(deps.db, events)) ?? null;
      const { keys, accounts, inserted } = await deps.db.transaction().execute(async (trx) => {
        const insertedIds = new Set(await insertGenerations(trx, rows));

        // Per (key, account, UTC day): the four periods and the newly inserted units. A batch has
        // a few of these, so the per-(key, period) work below is per group, not per event.
        const newRecords: { record: GenerationRow; units: bigint }[] = [];
        const groups = new Map<
          string,
          { keyId: string; accountId: string; periods: string[]; units: bigint }
        >();
        const accountDeltas = new Map<string, bigint>();
        events.forEach((e, i) => {
          const day = dayOf(e.finished_at);
          const gid = `${e.key_id}|${e.account_id}|${day}`;
          let g = groups.get(gid);
          if (!g) {
            g = { keyId: e.key_id, accountId: e.account_id, periods: periodsOf(day, byDay), units: 0n };
            groups.set(gid, g);
          }
          if (!insertedIds.has(e.id)) return;
          const u = units[i] as bigint;
          newRecords.push({ record: rows[i] as GenerationRow, units: u });
          if (u === 0n) return;
          g.units += u;
          accountDeltas.set(e.account_id, (accountDeltas.get(e.account_id) ?? 0n) + u);
        });
        const keyDeltas = new Map<
          string,
          { keyId: string; accountId: string; period: string; units: bigint }
        >();
        const touchedPairs = new Map<string, { keyId: string; period: string }>();
        for (const g of groups.values()) {
          for (const period of g.periods) {
            const id = `${g.keyId}|${period}`;
            touchedPairs.set(id, { keyId: g.keyId, period });
            if (g.units === 0n) continue;
            const d = keyDeltas.get(id);
            if (d) d.units += g.units;
            else keyDeltas.set(id, { keyId: g.keyId, accountId: g.accountId, period, units: g.units });
          }
        }

        // Same lock order in every worker: roll-ups by primary key, spend by key id then period,
        // accounts by id. Pairs and accounts this batch touched without adding to them (duplicates,
        // zero costs) are read, so Redis is refreshed for them too.
        // Titles past the account's share of the day roll up as "(other)" (analytics/app-bound.ts).
        const rolled = await boundApps(trx, newRecords, deps.appsPerDay ?? 200);
        const teams = teamBatch(events, insertedIds, units, (day) => periodsOf(day, byDay));
        const sums: BatchSums = {
          teamSpend: teams.spend,
          readTeamSpend: teams.read,
          hourly: rollupRows(rolled, 'hour'),
          daily: rollupRows(rolled, 'day'),
          keySpend: [...keyDeltas.values()]
            .sort((a, b) => (a.keyId === b.keyId ? cmp(a.period, b.period) : cmp(a.keyId, b.keyId)))
            .map((d) => ({
              key_id: d.keyId,
              account_id: d.accountId,
              period: d.period,
              amount: toDecimal(d.units),
            })),
          accountUsage: [...accountDeltas.entries()]
            .sort(([a], [b]) => cmp(a, b))
            .map(([account_id, u]) => ({ account_id, amount: toDecimal(u) })),
          readKeySpend: [...touchedPairs.entries()]
            .filter(([id]) => !keyDeltas.has(id))
            .map(([, p]) => ({ key_id: p.keyId, period: p.period })),
          readAccounts: [...new Set(events.map((e) => e.account_id))].filter((a) => !accountDeltas.has(a)),
        };
        const totals = await applyBatchSums(trx, sums);
        await deps.alerts?.decide(trx, alertPlan, sums, totals);
        const keyTotals = new Map<string, bigint>();
        for (const r of totals.keys) keyTotals.set(`${r.key_id}|${r.period}`, toUnits(r.amount));
        const accountTotals = new Map<string, bigint>();
        for (const r of totals.accounts) accountTotals.set(r.account_id, toUnits(r.amount));

        const byKey = new Map<string, CommittedKey>();
        const byAccount = new Map<string, CommittedAccount>();
        for (const e of events) {
          let k = byKey.get(e.key_id);
          if (!k) {
            k = { keyId: e.key_id, totals: [], requestIds: [] };
            byKey.set(e.key_id, k);
          }
          k.requestIds.push(e.id);
          let a = byAccount.get(e.account_id);
          if (!a) {
            a = {
              accountId: e.account_id,
              usageUnits: accountTotals.get(e.account_id) ?? 0n,
              requestIds: [],
            };
            byAccount.set(e.account_id, a);
          }
          a.requestIds.push(e.id);
        }
        for (const [id, { keyId, period }] of touchedPairs) {
          byKey.get(keyId)?.totals.push([period, keyTotals.get(id) ?? 0n]);
        }
        return {
          keys: [...byKey.values(), ...teams.committed(totals.teams)],
          accounts: [...byAccount.values()],
          inserted: insertedIds.size,
        };
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
        if (attempt < attempts) {
          await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
          continue;
        }
        if (classifyBillingFailure(err) !== 'transient') {
          // Not an outage (e.g. a hash that is not a hash): trying again changes nothing. Postgres
          // holds the truth; never re-bill to fix Redis.
          log.error(
            { err, keys: keys.length, accounts: accounts.length },
            'spend counters not updated in Redis after commit',
          );
          return;
        }
        // Redis is away. Bounded memory: past the cap the batch waits too (not acked; the consumer
        // retries it, which inserts nothing again and brings Redis up to date).
        let ids = 0;
        for (const o of [...keys, ...accounts]) ids += o.requestIds.length;
        if (backlogIds + ids > backlogMax) throw err;
        log.warn(
          { err, keys: keys.length, accounts: accounts.length },
          'Redis unreachable after commit: spend counter update kept and retried until it returns',
        );
        addToBacklog(keys, accounts);
        scheduleRetry();
        return;
      }
    }
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
