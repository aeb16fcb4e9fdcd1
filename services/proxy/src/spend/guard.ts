import type { CachedKey } from '@tollgate/key-cache';

/**
 * The seam between the proxy and spend/credit enforcement (contracts.md, "Proxy → billing").
 * The billing engineer supplies the real implementation (`createRedisSpendGuard` in packages/spend);
 * main.ts picks it. The proxy calls `admit` before forwarding and `settle` exactly once at the end.
 */
export type SpendReservation = unknown;

export interface SpendGuard {
  /** Before forwarding. Throws AppError('key_limit_exceeded' | 'payment_required'). */
  admit(input: {
    key: CachedKey;
    worstCaseCostUnits: bigint;
    requestId: string;
  }): Promise<SpendReservation | null>;
  /** Exactly once after the request ends (success, error, cancel) with its final cost in units. */
  settle(reservation: SpendReservation | null, costUnits: bigint): Promise<void>;
}

/** Admits everything, reserves nothing. The default until billing's guard is wired in. */
export const allowAllSpendGuard: SpendGuard = {
  admit: async () => null,
  settle: async () => {},
};
