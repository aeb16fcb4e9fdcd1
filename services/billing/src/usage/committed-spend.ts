import type { UsageEventV1 } from '@tollgate/events';
import { toUnits } from '@tollgate/money';
import type { CommittedAccount, CommittedKey } from '@tollgate/spend';
import type { BatchTotals } from './usage.repository';

/**
 * What a committed batch tells the Redis counters (`SpendStore.applyCommitted`): per key, the
 * committed Postgres total of every (key, period) the batch touched and its request ids; per account,
 * its committed usage and request ids. Duplicates included: a batch redelivered after a crash between
 * commit and Redis update inserts nothing and still brings Redis up to date.
 */
export function committedSpend(
  events: readonly UsageEventV1[],
  touchedPairs: ReadonlyMap<string, { keyId: string; period: string }>,
  totals: Pick<BatchTotals, 'keys' | 'accounts'>,
): { keys: CommittedKey[]; accounts: CommittedAccount[] } {
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
      a = { accountId: e.account_id, usageUnits: accountTotals.get(e.account_id) ?? 0n, requestIds: [] };
      byAccount.set(e.account_id, a);
    }
    a.requestIds.push(e.id);
  }
  for (const [id, { keyId, period }] of touchedPairs) {
    byKey.get(keyId)?.totals.push([period, keyTotals.get(id) ?? 0n]);
  }
  return { keys: [...byKey.values()], accounts: [...byAccount.values()] };
}
