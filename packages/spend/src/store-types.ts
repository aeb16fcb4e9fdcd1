/** A live reservation whose lease a proxy renews: the owner hashes it holds on and its amount. */
export interface Lease {
  keyId: string;
  accountId: string;
  requestId: string;
  keyTracked: boolean;
  accountTracked: boolean;
  units: bigint;
  /** The key's limit (units) and the period field it was admitted in, to re-check a lapsed lease. */
  limitUnits?: bigint | null;
  period?: string;
  /** A hold was made on the team's hash (issue 29): the team, its limit and the period field. */
  team?: TeamHold;
}

/** The team of an admission or a lease (issue 29): its hash holds the request like the key's. */
interface TeamHold {
  teamId: string;
  limitUnits: bigint;
  /** Period field of the team's current limit period (`periodKey(teamLimitReset, now)`). */
  period: string;
}

/** What a renewal found: how many holds it renewed, and lapsed leases that no longer fit. */
interface RenewResult {
  renewed: number;
  /** Leases held again after they lapsed that put their key or account over its limit: stop them. */
  overLimit: Lease[];
  /** Of those, the leases whose team hash was over (issue 29): the team's refusal. */
  overTeam: Set<Lease>;
}

/**
 * `expiredPending`: settled costs (p: holds) this admission's sweeps dropped after `pendingTtlMs`
 * without billing having counted them — usage that never reached billing (e.g. dead-lettered).
 */
export type AdmitOutcome =
  | {
      code: 'admitted';
      keyTracked: boolean;
      accountTracked: boolean;
      /** A hold was made on the team's hash (the admission named a `team`). */
      teamTracked: boolean;
      staleKey: boolean;
      staleAccount: boolean;
      staleTeam: boolean;
      expiredPending: number;
    }
  | {
      /** `team_limit`: the team's spend + held + worst case exceed its limit (issue 29). */
      code: 'key_limit' | 'team_limit' | 'credits';
      staleKey: boolean;
      staleAccount: boolean;
      staleTeam: boolean;
      expiredPending: number;
    }
  /**
   * A hash is missing or unbuilt (`_ok` absent: never loaded, or a lapsed reservation was swept —
   * its counters may be short of Postgres): rebuild it from Postgres, then admit again.
   */
  | { code: 'rebuild'; key: boolean; account: boolean; team: boolean; expiredPending: number }
  /** With a `check`: the key's cached record changed (or is pending); nothing counted or held. */
  | { code: 'stale' }
  /** With a `check`: the request is over the key's rate limit (counted, nothing held). */
  | { code: 'rate_limited' }
  /** With a `tokenRate`: this minute's tokens plus the request's worst case exceed the limit (nothing charged or held). */
  | { code: 'token_rate_limited' }
  /** With a `teamTokenRate`: the same for the team's counter (issue 29). */
  | { code: 'team_token_rate_limited' };

/**
 * The proxy's checked admission (docs/architecture.md, "Round trips"): the key-cache record check and
 * the rate-limit count folded into the admission script, so a request whose key record the proxy
 * already holds costs one round trip before the provider instead of two.
 */
export interface AdmitCheck {
  /** The key-cache record hash (`KeyCache.redisKey`) and the version of the caller's copy. */
  recordKey: string;
  version: number;
  /** The key's rate-limit window counter and its TTL (`KeyCache.rateWindow`). */
  counterKey: string;
  counterTtlMs: number;
  /** Requests allowed in the window; null = no rate limit (the request is still counted). */
  rateLimit: number | null;
}

export interface AdmitArgs {
  keyId: string;
  accountId: string;
  requestId: string;
  worstCaseUnits: bigint;
  /** Limit in units, or null when the key has no limit. */
  limitUnits: bigint | null;
  /** Period field of the key's current limit period (`periodKey(limitReset, now)`). */
  period: string;
  now: number;
  /** Verify the caller's key record and count the request first (code `stale` / `rate_limited`). */
  check?: AdmitCheck;
  /** The key's tokens-per-minute limit: charged with `tokens` when admitted (code `token_rate_limited` when over). */
  tokenRate?: TokenRateCharge;
  /** The key's team with a spend limit (issue 29): checked and held in the same step. */
  team?: TeamHold;
  /** The team's tokens-per-minute limit: its counter is charged like the key's (code `team_token_rate_limited`). */
  teamTokenRate?: TokenRateCharge;
}

/** A tokens-per-minute charge (issue 29): the key's (or team's) counter of the current minute. */
interface TokenRateCharge {
  /** `tokenRateKey(keyId, now)`. */
  counterKey: string;
  limit: number;
  /** The request's worst-case tokens (prompt bound + output budget). */
  tokens: number;
  counterTtlMs: number;
}

export interface SettleArgs {
  keyId: string;
  accountId: string;
  requestId: string;
  costUnits: bigint;
  keyTracked: boolean;
  accountTracked: boolean;
  now: number;
  /** The team whose hash holds the request (issue 29). */
  team?: { teamId: string };
  /**
   * Tokens-per-minute counters the admission charged with the worst case, and what to give back
   * (worst case − tokens used, > 0): corrected in the settle's own script call.
   */
  tokenRefund?: { counterKeys: string[]; tokens: number };
}

/** What the billing worker committed for one key or account, as Postgres totals after the commit. */
export interface CommittedKey {
  keyId: string;
  /** Set when the owner is a team (issue 29): `keyId` is the team's id, this its account (its hash). */
  teamOfAccount?: string;
  /** period -> total spend in Postgres (units), read inside or after the committing transaction. */
  totals: Array<[period: string, units: bigint]>;
  requestIds: string[];
}
export interface CommittedAccount {
  accountId: string;
  usageUnits: bigint;
  requestIds: string[];
}

export interface AccountState {
  usageUnits: bigint;
  creditsUnits: bigint;
  postpaid: boolean;
  /** account_settings.version in Postgres; settings in Redis only move forward. */
  version: number;
}

/** Typed access to the spend layout; used by the guard (proxy side) and by billing (worker, rebuild). */
export interface SpendStore {
  /** With a `check`, `count` is the request's number in its key's rate-limit window (0 when stale). */
  admit(args: AdmitArgs): Promise<AdmitOutcome & { count?: number }>;
  settle(args: SettleArgs): Promise<void>;
  /**
   * Settles many requests in one script call (per `SETTLE_CHUNK` members): each exactly as `settle`
   * alone, applied in list order. Each member is applied at most once; should a call fail (Redis
   * gone), the members it did not apply keep their reservations until the lease lapses, exactly as
   * a failed single settle does. Resolves with the request ids of members whose hash is not a hash
   * (nothing written for them; every other member was settled).
   */
  settleMany(list: readonly SettleArgs[]): Promise<Set<string>>;
  /** Renews the leases of live reservations (one script call); returns how many were still held. */
  renew(now: number, leases: Iterable<Lease>): Promise<RenewResult>;
  /** Billing worker, after commit: raise counters to the committed totals, clear holds of the batch. */
  applyCommitted(now: number, keys: CommittedKey[], accounts: CommittedAccount[]): Promise<void>;
  /** Rebuild step 1: placeholder so worker updates racing with the Postgres read are not lost. */
  beginRebuild(
    target: { keyId?: string; accountId?: string; team?: { accountId: string; teamId: string } },
    at: number,
  ): Promise<void>;
  /** Rebuild step 2 for a key: totals of the current (and later) periods, read after beginRebuild. */
  loadKey(
    keyId: string,
    at: number,
    current: { d: string; w: string; m: string },
    totals: Array<[string, bigint]>,
  ): Promise<void>;
  /** Rebuild step 2 for a team (issue 29): like a key's, on the team's hash. */
  loadTeam(
    team: { accountId: string; teamId: string },
    at: number,
    current: { d: string; w: string; m: string },
    totals: Array<[string, bigint]>,
  ): Promise<void>;
  /** Rebuild step 2 for an account. */
  loadAccount(accountId: string, at: number, state: AccountState): Promise<void>;
  /** After a committed credits/postpaid change (ignored when the hash is missing or newer). */
  updateAccountSettings(accountId: string, state: Omit<AccountState, 'usageUnits'>): Promise<void>;
}
