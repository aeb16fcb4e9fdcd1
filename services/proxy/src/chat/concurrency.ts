/**
 * Per-key cap on chat completions in flight in this process (issue 14: one key must not hold every
 * provider connection). Counted in process memory, not Redis: zero round trips on the hot path, and
 * a counter that can never leak across a crash (a Redis counter would need a lease per request).
 * With N proxy processes a key may have up to N × limit completions in flight (docs/architecture.md).
 */
export class KeyConcurrency {
  private readonly counts = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Takes a slot for `keyId`: the release function (call exactly once), or null when at the limit. */
  acquire(keyId: string): (() => void) | null {
    if (this.limit <= 0) return noop;
    const n = this.counts.get(keyId) ?? 0;
    if (n >= this.limit) return null;
    this.counts.set(keyId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(keyId) ?? 1) - 1;
      if (left <= 0) this.counts.delete(keyId);
      else this.counts.set(keyId, left);
    };
  }

  /** Completions in flight for `keyId`. */
  inFlight(keyId: string): number {
    return this.counts.get(keyId) ?? 0;
  }
}

const noop = () => {};
