/**
 * Rate limits for lookups of unknown keys (issues 14 and 23): a key that is in no cache costs a
 * keys-service call, a Postgres query and a Redis write, and random well-formed keys are always
 * unknown. Two bounds, both in process memory (no Redis round trip), both counting only lookups that
 * found no key:
 *
 * - per client address (the address `TRUSTED_PROXIES` resolves, not the load balancer's): at most
 *   `perMinute` per minute; beyond, that address's requests whose key is not cached get 429;
 * - all clients together: a token bucket of `perSecond` refilled up to `burst`, sized to what the
 *   keys service absorbs; when it is empty every uncached key gets 429 until it refills, so many
 *   addresses together cannot push more unknown lookups onto the keys service than that.
 *
 * Keys in the Redis cache (every valid key once used) are never affected, and a repeated unknown key
 * is answered from the Redis negative entry.
 */
export type UnknownKeyRefusal = 'address' | 'global';

export interface UnknownKeyLimits {
  /** Per client address per minute (0 = no limit). */
  perMinute: number;
  /** All clients together, per second (0 = no global bound). */
  perSecond?: number;
  /** The global bucket's size (default 2 × perSecond, at least 1). */
  burst?: number;
}

export class UnknownKeyLimiter {
  readonly perMinute: number;
  readonly #windows = new Map<string, { start: number; count: number }>();
  readonly #global: TokenBucket | null;

  constructor(
    limits: UnknownKeyLimits,
    private readonly now: () => number = Date.now,
    private readonly maxTracked = 100_000,
  ) {
    this.perMinute = limits.perMinute;
    const perSecond = limits.perSecond ?? 0;
    this.#global =
      perSecond > 0 ? new TokenBucket(perSecond, limits.burst ?? Math.max(1, 2 * perSecond), now) : null;
  }

  /** Why an uncached key of `client` must not be looked up now, or null when it may. */
  blocked(client: string): UnknownKeyRefusal | null {
    if (this.perMinute > 0) {
      const w = this.#windows.get(client);
      if (w !== undefined && this.now() - w.start < 60_000 && w.count >= this.perMinute) return 'address';
    }
    if (this.#global && !this.#global.available()) return 'global';
    return null;
  }

  /** Counts one lookup of `client` that found no key. */
  recordUnknown(client: string): void {
    this.#global?.take();
    if (this.perMinute <= 0) return;
    const t = this.now();
    const w = this.#windows.get(client);
    if (w && t - w.start < 60_000) {
      w.count++;
      return;
    }
    if (this.#windows.size >= this.maxTracked) this.#windows.clear();
    this.#windows.set(client, { start: t, count: 1 });
  }
}

/** A token bucket: `rate` tokens per second, at most `size`; a take may leave it below zero (debt). */
export class TokenBucket {
  #tokens: number;
  #at: number;

  constructor(
    private readonly rate: number,
    private readonly size: number,
    private readonly now: () => number,
  ) {
    this.#tokens = size;
    this.#at = now();
  }

  #refill(): void {
    const t = this.now();
    this.#tokens = Math.min(this.size, this.#tokens + ((t - this.#at) / 1000) * this.rate);
    this.#at = t;
  }

  /** At least one whole token is there. */
  available(): boolean {
    this.#refill();
    return this.#tokens >= 1;
  }

  /**
   * Takes one token, even past zero: lookups already in flight when the bucket emptied are paid for
   * by the next ones, so concurrency cannot lift the rate. The debt is bounded by one bucket.
   */
  take(): void {
    this.#refill();
    this.#tokens = Math.max(-this.size, this.#tokens - 1);
  }
}
