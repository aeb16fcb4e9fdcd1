import type { SpendGuard } from '@tollgate/spend';

export type { SpendCheck, SpendGuard, SpendReservation } from '@tollgate/spend';
/**
 * The seam between the proxy and spend/credit enforcement: the proxy calls `admit` before
 * forwarding and `settle` exactly once at the end. The real implementation is
 * `createRedisSpendGuard` from @tollgate/spend (chosen by SPEND_GUARD in the proxy config).
 */
export { KeyRateLimited, StaleKeyRecord } from '@tollgate/spend';

/** Admits everything, reserves nothing: `SPEND_GUARD=off`, for tests with a billing stand-in only. */
export const allowAllSpendGuard: SpendGuard = {
  admit: async () => null,
  settle: async () => {},
};
