import type { CommittedAccount, CommittedKey } from '@tollgate/spend';

/**
 * Redis updates of committed batches waiting for Redis, merged per key and account: the highest
 * committed total of each (key, period) and of each account (totals only grow, so the highest is the
 * latest), and every request id once.
 */
export interface CommittedBacklog {
  add(keys: readonly CommittedKey[], accounts: readonly CommittedAccount[]): void;
  /** Everything waiting, as one update; the backlog is empty afterwards. */
  take(): { keys: CommittedKey[]; accounts: CommittedAccount[] };
  /** Request ids waiting (the memory bound). */
  readonly ids: number;
  readonly empty: boolean;
}

export function createCommittedBacklog(): CommittedBacklog {
  const keys = new Map<string, { totals: Map<string, bigint>; ids: Set<string>; teamOfAccount?: string }>();
  const accounts = new Map<string, { usage: bigint; ids: Set<string> }>();
  let ids = 0;
  const addIds = (to: Set<string>, requestIds: readonly string[]) => {
    for (const id of requestIds) {
      if (to.has(id)) continue;
      to.add(id);
      ids++;
    }
  };
  return {
    add(committedKeys, committedAccounts) {
      for (const k of committedKeys) {
        let b = keys.get(k.keyId);
        if (!b) {
          b = { totals: new Map(), ids: new Set(), teamOfAccount: k.teamOfAccount };
          keys.set(k.keyId, b);
        }
        for (const [period, units] of k.totals) {
          const cur = b.totals.get(period);
          if (cur === undefined || units > cur) b.totals.set(period, units);
        }
        addIds(b.ids, k.requestIds);
      }
      for (const a of committedAccounts) {
        let b = accounts.get(a.accountId);
        if (!b) {
          b = { usage: a.usageUnits, ids: new Set() };
          accounts.set(a.accountId, b);
        }
        if (a.usageUnits > b.usage) b.usage = a.usageUnits;
        addIds(b.ids, a.requestIds);
      }
    },
    take() {
      const out = {
        keys: [...keys].map(([keyId, b]) => ({
          keyId,
          ...(b.teamOfAccount ? { teamOfAccount: b.teamOfAccount } : {}),
          totals: [...b.totals],
          requestIds: [...b.ids],
        })),
        accounts: [...accounts].map(([accountId, b]) => ({
          accountId,
          usageUnits: b.usage,
          requestIds: [...b.ids],
        })),
      };
      keys.clear();
      accounts.clear();
      ids = 0;
      return out;
    },
    get ids() {
      return ids;
    },
    get empty() {
      return keys.size + accounts.size === 0;
    },
  };
}
