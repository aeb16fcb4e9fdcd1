/**
 * Per-provider circuit breaker, per proxy process: after `failureThreshold` consecutive failed
 * attempts a provider is skipped for `cooldownMs` (while another candidate exists), then one request
 * probes it (half-open): success closes the circuit, failure opens it again.
 *
 * Per process on purpose: it costs no Redis round trip on the healthy path, and each process learns a
 * provider is down after a handful of its own requests (`failureThreshold`), which failover absorbs.
 */
export class ProviderHealth {
  private readonly state = new Map<string, { failures: number; openUntil: number; probing: boolean }>();

  constructor(
    private readonly failureThreshold = 3,
    private readonly cooldownMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** May this provider be tried now? (A half-open provider admits one probe at a time.) */
  available(name: string): boolean {
    const s = this.state.get(name);
    if (!s || s.failures < this.failureThreshold) return true;
    if (this.now() < s.openUntil || s.probing) return false;
    return true;
  }

  /** Called when an attempt on the provider starts; marks a half-open probe. */
  attempting(name: string): void {
    const s = this.state.get(name);
    if (s && s.failures >= this.failureThreshold && this.now() >= s.openUntil) s.probing = true;
  }

  success(name: string): void {
    this.state.delete(name);
  }

  /**
   * An attempt that says nothing about the provider (at capacity in this process; a request too
   * large for its rate limit): no verdict, but a half-open probe it was ends, so another may probe.
   */
  inconclusive(name: string): void {
    const s = this.state.get(name);
    if (s) s.probing = false;
  }

  failure(name: string): void {
    const s = this.state.get(name) ?? { failures: 0, openUntil: 0, probing: false };
    s.failures++;
    s.probing = false;
    if (s.failures >= this.failureThreshold) s.openUntil = this.now() + this.cooldownMs;
    this.state.set(name, s);
  }

  /** Open circuits, for /metrics and logs. */
  open(): string[] {
    const t = this.now();
    return [...this.state.entries()]
      .filter(([, s]) => s.failures >= this.failureThreshold && t < s.openUntil)
      .map(([n]) => n);
  }
}

/**
 * Round-robin over a provider's API keys; a key the provider rejected (401/403/429) is skipped for
 * `cooldownMs` unless every key is cooling down.
 */
export class KeyRing {
  private readonly next = new Map<string, number>();
  private readonly coolingUntil = new Map<string, number>();

  constructor(
    private readonly cooldownMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  pick(
    provider: string,
    keys: readonly string[],
    exclude: ReadonlySet<string> = new Set(),
  ): string | undefined {
    if (keys.length <= 1) return keys[0];
    const start = this.next.get(provider) ?? 0;
    const t = this.now();
    let fallback: string | undefined;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[(start + i) % keys.length] as string;
      if (exclude.has(k)) continue;
      fallback ??= k;
      if ((this.coolingUntil.get(k) ?? 0) > t) continue;
      this.next.set(provider, (start + i + 1) % keys.length);
      return k;
    }
    this.next.set(provider, (start + 1) % keys.length);
    return fallback ?? keys[start % keys.length];
  }

  reject(key: string, retryAfterMs?: number): void {
    this.coolingUntil.set(key, this.now() + Math.max(retryAfterMs ?? 0, this.cooldownMs));
  }
}
