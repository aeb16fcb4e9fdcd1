/**
 * Caps on chat completions in flight in this process, per key and per account (issue 14: one key
 * must not hold every provider connection; and since an account can mint keys freely, neither may
 * one account). Counted in process memory, not Redis: zero round trips on the hot path, and a
 * counter that can never leak across a crash (a Redis counter would need a lease per request).
 * With N proxy processes a key or account may have up to N × limit completions in flight
 * (docs/architecture.md).
 */
export interface SlotRefusal {
  /** Which cap was reached. */
  scope: 'key' | 'account';
  limit: number;
}

export class CompletionSlots {
  private readonly perKey = new Map<string, number>();
  private readonly perAccount = new Map<string, number>();

  /** A limit of 0 means no limit. */
  constructor(
    readonly keyLimit: number,
    readonly accountLimit: number,
  ) {}

  /**
   * Takes a slot for `keyId` of `accountId`: the release function (idempotent: `res.once('close')`
   * and an early release may both call it), or which cap was reached (nothing is taken then).
   */
  acquire(keyId: string, accountId: string): (() => void) | SlotRefusal {
    const { keyLimit, accountLimit } = this;
    if (keyLimit > 0 && (this.perKey.get(keyId) ?? 0) >= keyLimit) return { scope: 'key', limit: keyLimit };
    if (accountLimit > 0 && (this.perAccount.get(accountId) ?? 0) >= accountLimit)
      return { scope: 'account', limit: accountLimit };
    if (keyLimit > 0) take(this.perKey, keyId);
    if (accountLimit > 0) take(this.perAccount, accountId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (keyLimit > 0) give(this.perKey, keyId);
      if (accountLimit > 0) give(this.perAccount, accountId);
    };
  }

  /** Completions in flight for `keyId` (0 when the key cap is off: nothing is counted). */
  keyInFlight(keyId: string): number {
    return this.perKey.get(keyId) ?? 0;
  }

  /** Completions in flight for `accountId` (0 when the account cap is off). */
  accountInFlight(accountId: string): number {
    return this.perAccount.get(accountId) ?? 0;
  }
}

function take(counts: Map<string, number>, id: string): void {
  counts.set(id, (counts.get(id) ?? 0) + 1);
}

function give(counts: Map<string, number>, id: string): void {
  const left = (counts.get(id) ?? 1) - 1;
  if (left <= 0) counts.delete(id);
  else counts.set(id, left);
}
