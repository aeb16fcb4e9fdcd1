import type { ServiceSigner } from '@tollgate/auth';
import type { AppError } from '@tollgate/errors';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { RedisClient } from '@tollgate/redis';
import type { AdmitCheck } from './store-types';
import type { SpendTimings } from './timings';

/** `admit`'s optional check: verify the key record and count the request in the same script call. */
export interface SpendCheck extends AdmitCheck {
  /** The request's number in its key's rate-limit window, once counted (before any outcome). */
  onCount(count: number): void;
}

/** What admit hands back and settle takes: which holds were made for the request. */
export interface SpendReservation {
  keyId: string;
  accountId: string;
  requestId: string;
  /** A hold was made on the key's hash (the key has a limit). */
  keyTracked: boolean;
  /** A hold was made on the account's hash (the account is prepaid). */
  accountTracked: boolean;
  /** A hold was made on the team's hash (the key's team has a spend limit; issue 29). */
  team?: { teamId: string };
  /**
   * Tokens-per-minute counters (the key's, the team's) charged with `tokens`, the worst case: settle
   * gives back what the request did not use (issue 29).
   */
  tokenCharge?: { counterKeys: string[]; tokens: number };
  /**
   * Set by the caller: called when the request must stop because its lease lapsed (the process
   * stalled past it, or Redis lost it) and holding it again put the key or account over its limit
   * (others were admitted into the gap). Continuing could overshoot the limit.
   */
  onLost?: (reason: AppError) => void;
}

/** What the proxy calls around every chat completion (services/proxy/src/spend/guard.ts). */
export interface SpendGuard {
  /**
   * Before forwarding. Throws AppError('key_limit_exceeded' | 'team_limit_exceeded' | 'payment_required'
   * | 'rate_limited' (tokens per minute)). With `check`
   * (only when `checks` is true), the key record and the rate-limit count are verified in the same
   * call: throws `StaleKeyRecord` or `KeyRateLimited` before anything is held.
   */
  admit(input: {
    key: CachedKey;
    worstCaseCostUnits: bigint;
    requestId: string;
    check?: SpendCheck;
    /**
     * The request's worst-case tokens (prompt bound + output budget): charged against the key's
     * `rateLimitTpm` and its team's `teamRateLimitTpm` in the same script call (429 `rate_limited`,
     * reason `tpm` / `team_tpm`, when over it), corrected at settle to the tokens used.
     */
    worstCaseTokens?: number;
  }): Promise<SpendReservation | null>;
  /** Whether `admit` takes a `check` (the Redis guard; not `SPEND_GUARD=off`). */
  readonly checks?: boolean;
  /**
   * Exactly once after the request ends (success, error, cancel) with its final cost in units and
   * the tokens it used (prompt + completion; the token-rate charge is corrected to it; absent = the
   * worst case stays charged). Resolves once the settle reached Redis (the Redis guard sends the
   * settles of `settleLingerMs` in one script call).
   */
  settle(reservation: SpendReservation | null, costUnits: bigint, tokensUsed?: number): Promise<void>;
  /** Sends the settles still waiting for their batch (shutdown, before Redis is closed). */
  flush?(): Promise<void>;
}

export interface RedisSpendGuardOptions {
  redis: RedisClient;
  prefix: string;
  /** Billing's base URL, for `POST /internal/spend/rebuild` when a counter is missing. */
  billingUrl: string;
  /** The proxy's identity (billing accepts rebuild calls from the proxy only). */
  signer: ServiceSigner;
  clock?: () => Date;
  timings?: Partial<SpendTimings>;
  /** Rebuild request timeout (default 5 s). */
  rebuildTimeoutMs?: number;
  /** Where the details of failed billing calls go (never into an answer). */
  logger?: Logger;
  /** Called with background refresh and lease-renewal failures (they never fail a request). */
  onBackgroundError?: (err: unknown) => void;
  /**
   * Called when an admission's sweep dropped settled costs whose pending hold outlived
   * `pendingTtlMs` (7 days) uncounted by billing: usage that never reached billing. A metric.
   */
  onExpiredPending?: (count: number) => void;
}
