/**
 * Rate limit for lookups of unknown keys (issue 14): a key that is in no cache costs a keys-service
 * call, a Postgres query and a Redis write, and random well-formed keys are always unknown. Each
 * client address may cause at most `perMinute` lookups that found no key per minute; beyond, its
 * requests whose key is not in the cache get 429 without asking the keys service. Keys in the Redis
 * cache (every valid key once used) are never affected, and a repeated unknown key is answered from
 * the Redis negative entry. In process memory (no Redis round trip), bounded.
 */
export class UnknownKeyLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
    private readonly maxTracked = 100_000,
  ) {}

  /** True when `client` has used up its unknown-key lookups of the current minute. */
  blocked(client: string): boolean {
    if (this.perMinute <= 0) return false;
    const w = this.windows.get(client);
    return w !== undefined && this.now() - w.start < 60_000 && w.count >= this.perMinute;
  }

  /** Counts one lookup of `client` that found no key. */
  recordUnknown(client: string): void {
    if (this.perMinute <= 0) return;
    const t = this.now();
    const w = this.windows.get(client);
    if (w && t - w.start < 60_000) {
      w.count++;
      return;
    }
    if (this.windows.size >= this.maxTracked) this.windows.clear();
    this.windows.set(client, { start: t, count: 1 });
  }
}
