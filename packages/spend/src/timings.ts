export interface SpendTimings {
  /**
   * Lease of an admit reservation: the proxy renews it every `leaseRenewMs` while the request lives,
   * so a crashed proxy's holds lapse within this (plus one sweep). Default 10 s.
   */
  reservationTtlMs: number;
  /** How often a proxy renews the leases of its live reservations (one Redis call for all). Default 3 s. */
  leaseRenewMs: number;
  /**
   * How long a settled cost is held while the billing worker has not counted it. Billing removes it
   * when it commits the request, so this only bounds a hold whose event can never be billed
   * (dead-lettered); it must outlast any billing outage. Default 7 days.
   */
  pendingTtlMs: number;
  /** How long the worker's "already counted" tombstone waits for a late settle. Default 15 min. */
  tombstoneTtlMs: number;
  /** A key hash older than this is refreshed from Postgres in the background (prunes old periods). */
  keyRefreshMs: number;
  /** An account hash older than this is refreshed from Postgres in the background. */
  accountRefreshMs: number;
  /**
   * How long the proxy's guard lets a settle wait for others to share its script call (one call per
   * batch instead of one per request; settle is off the request path). Default 5 ms, like the usage
   * publisher's linger. 0 = the settles of one event-loop turn.
   */
  settleLingerMs: number;
  /** Sweep interval for expired holds (runs inside admit). Default 2 s. */
  gcIntervalMs: number;
  /** Idle hashes expire after this (then they are rebuilt on next use). */
  hashTtlSeconds: number;
}

export const defaultTimings: SpendTimings = {
  reservationTtlMs: 10_000,
  leaseRenewMs: 3_000,
  pendingTtlMs: 7 * 86_400_000,
  tombstoneTtlMs: 15 * 60_000,
  keyRefreshMs: 5 * 60_000,
  accountRefreshMs: 5 * 60_000,
  settleLingerMs: 5,
  gcIntervalMs: 2_000,
  hashTtlSeconds: 35 * 86_400,
};
