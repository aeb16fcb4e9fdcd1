import { compareIds, type UsageEventV1 } from '@tollgate/events';
import { periodKey, toDecimal } from '@tollgate/money';
import { dayOf } from '../analytics/usage-rollup';
import type { GenerationRow } from '../generations/generations.repository';
import type { BatchSums } from './usage.repository';

/** What a batch adds to spend, per (key, period) and per account, and what it touched. */
export interface BatchSpend {
  /** Generation rows inserted now, with their cost in units (for the roll-ups). */
  newRecords: Array<{ record: GenerationRow; units: bigint }>;
  /** `keyId|period` → the units the new records add (pairs with nothing to add are absent). */
  keyDeltas: Map<string, { keyId: string; accountId: string; period: string; units: bigint }>;
  /** Account id → the units the new records add. */
  accountDeltas: Map<string, bigint>;
  /** `keyId|period` → every (key, period) the batch touched, duplicates and zero costs included. */
  touchedPairs: Map<string, { keyId: string; period: string }>;
  /** Every account of the batch. */
  accounts: Set<string>;
}

/**
 * Sums a batch of distinct events (`rows[i]` and `units[i]` are event i's record and cost) per
 * (key, account, UTC day of `finished_at`) group — a batch has a few of these, so the per-(key,
 * period) work is per group, not per event — then per (key, period) over the day's four periods.
 * Only events in `inserted` add; the others (already recorded) are touched, so their counters are
 * read and Redis refreshed for them too.
 */
export function sumBatchSpend(
  events: readonly UsageEventV1[],
  rows: readonly GenerationRow[],
  units: readonly bigint[],
  inserted: ReadonlySet<string>,
): BatchSpend {
  const byDay = new Map<string, string[]>();
  const newRecords: BatchSpend['newRecords'] = [];
  const groups = new Map<string, { keyId: string; accountId: string; periods: string[]; units: bigint }>();
  const accountDeltas = new Map<string, bigint>();
  const accounts = new Set<string>();
  events.forEach((e, i) => {
    accounts.add(e.account_id);
    const day = dayOf(e.finished_at);
    const gid = `${e.key_id}|${e.account_id}|${day}`;
    let g = groups.get(gid);
    if (!g) {
      g = { keyId: e.key_id, accountId: e.account_id, periods: periodsOf(day, byDay), units: 0n };
      groups.set(gid, g);
    }
    if (!inserted.has(e.id)) return;
    const u = units[i] as bigint;
    newRecords.push({ record: rows[i] as GenerationRow, units: u });
    if (u === 0n) return;
    g.units += u;
    accountDeltas.set(e.account_id, (accountDeltas.get(e.account_id) ?? 0n) + u);
  });
  const keyDeltas: BatchSpend['keyDeltas'] = new Map();
  const touchedPairs: BatchSpend['touchedPairs'] = new Map();
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
  return { newRecords, keyDeltas, accountDeltas, touchedPairs, accounts };
}

/**
 * The spend part of the batch's one statement (`applyBatchSums`), in the same lock order in every
 * worker: spend by key id then period, accounts by id. Pairs and accounts the batch touched without
 * adding to them are read.
 */
export function spendSums(
  s: BatchSpend,
): Pick<BatchSums, 'keySpend' | 'accountUsage' | 'readKeySpend' | 'readAccounts'> {
  return {
    keySpend: [...s.keyDeltas.values()]
      .sort((a, b) => (a.keyId === b.keyId ? compareIds(a.period, b.period) : compareIds(a.keyId, b.keyId)))
      .map((d) => ({
        key_id: d.keyId,
        account_id: d.accountId,
        period: d.period,
        amount: toDecimal(d.units),
      })),
    accountUsage: [...s.accountDeltas.entries()]
      .sort(([a], [b]) => compareIds(a, b))
      .map(([account_id, u]) => ({ account_id, amount: toDecimal(u) })),
    readKeySpend: [...s.touchedPairs.entries()]
      .filter(([id]) => !s.keyDeltas.has(id))
      .map(([, p]) => ({ key_id: p.keyId, period: p.period })),
    readAccounts: [...s.accounts].filter((a) => !s.accountDeltas.has(a)),
  };
}

/** The four spend periods of a UTC day ('YYYY-MM-DD', the day of an event's `finished_at`). */
export function periodsOf(day: string, byDay: Map<string, string[]>): string[] {
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
