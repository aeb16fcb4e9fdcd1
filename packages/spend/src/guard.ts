import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { spendRebuild } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { createServiceClient } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import { type LimitReset, periodKey, toUnits } from '@tollgate/money';
import type { RedisClient } from '@tollgate/redis';
import {
  type AdmitCheck,
  createSpendStore,
  defaultTimings,
  type Lease,
  type SettleArgs,
  type SpendTimings,
  spendTokenRateKey,
} from './store';

/** Settles sent at once without waiting for the linger (one settle script call covers them). */
const SETTLE_BATCH = 128;

/**
 * A checked admission (`admit` with `check`): the key's cached record is no longer the caller's copy
 * (changed, pending or gone). Nothing was counted or held; authenticate afresh and admit again.
 */
export class StaleKeyRecord extends Error {
  constructor() {
    super('the key record changed since it was read');
  }
}

/** A checked admission found the request over the key's rate limit (counted, nothing held). */
export class KeyRateLimited extends Error {
  constructor() {
    super('over the key rate limit');
  }
}

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
   * Before forwarding. Throws AppError('key_limit_exceeded' | 'payment_required'). With `check`
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
     * `rateLimitTpm` in the same script call (429 `rate_limited`, reason `tpm`, when over it).
     */
    worstCaseTokens?: number;
  }): Promise<SpendReservation | null>;
  /** Whether `admit` takes a `check` (the Redis guard; not `SPEND_GUARD=off`). */
  readonly checks?: boolean;
  /**
   * Exactly once after the request ends (success, error, cancel) with its final cost in units.
   * Resolves once the settle reached Redis (the Redis guard sends the settles of `settleLingerMs`
   * in one script call).
   */
  settle(reservation: SpendReservation | null, costUnits: bigint): Promise<void>;
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

const PERIOD_WORD: Record<string, string> = {
  daily: 'daily',
  weekly: 'weekly',
  monthly: 'monthly',
  null: 'total',
};

export const keyLimitExceeded = (reset: LimitReset | null) => {
  const word = PERIOD_WORD[String(reset)] ?? 'total';
  // Not "has reached": the refusal also happens at $0 spent, when this request's worst case alone
  // (or with the requests in flight) would not fit under the limit.
  return new AppError(
    'key_limit_exceeded',
    `This request could exceed the key's ${word} spend limit (spent so far + requests in flight + this request's worst-case cost); lower max_tokens or raise the limit`,
    {
      limit_reset: reset,
      period: word,
    },
  );
};

/** 429: this minute's tokens of the key plus the request's worst case exceed its `rate_limit_tpm`. */
const tokenRateLimited = (limit: number, nowMs: number) => {
  const retryAfter = Math.max(1, Math.ceil((60_000 - (nowMs % 60_000)) / 1000));
  return new AppError(
    'rate_limited',
    `This key is limited to ${limit} tokens per minute (rate_limit_tpm, counted with each request's worst case: prompt + max_tokens); retry in ${retryAfter} s or lower max_tokens`,
    { limit, interval: '1m', reason: 'tpm', retry_after_seconds: retryAfter },
  );
};

export const paymentRequired = () =>
  new AppError('payment_required', 'The account has no credits left: add credits to continue');

/**
 * The spend guard the proxy calls around every chat completion. One Lua call per admit (checks the
 * key's limit for its current period and the account's credits, then reserves the worst case), one
 * per settle (turns the reservation into a pending cost until the billing worker counts it).
 * A missing hash (Redis flushed, evicted, expired) is rebuilt from Postgres through billing before
 * deciding; if billing cannot be reached the request is refused with 503, never admitted on a
 * counter read as zero.
 */
export function createRedisSpendGuard(options: RedisSpendGuardOptions): SpendGuard {
  const clock = options.clock ?? (() => new Date());
  const store = createSpendStore(options.redis, { prefix: options.prefix, timings: options.timings });
  const inflight = new Map<string, Promise<void>>();
  const leaseRenewMs = options.timings?.leaseRenewMs ?? defaultTimings.leaseRenewMs;

  /**
   * Live reservations of this process, by request id. Their leases are renewed together, one script
   * call every `leaseRenewMs`, while any exist (no timer runs when the process is idle); a reservation
   * leaves the set the moment settle is called, before the settle script is sent, so a renewal can
   * never resurrect a settled hold (both go over the same connection, in order).
   */
  interface LiveLease extends Lease {
    reservation: SpendReservation;
    limitReset: LimitReset | null;
  }
  const live = new Map<string, LiveLease>();

  /**
   * Settles wait up to `settleLingerMs` (or until SETTLE_BATCH of them wait) and go to Redis in one
   * script call (`SpendStore.settleMany`): off the request path, one call instead of one per request.
   * A reservation leaves `live` when settle is called, so a waiting settle's hold is no longer renewed:
   * should the process die before the batch is sent, the hold lapses with its lease like any other of a
   * crashed process. The cost is only that a finished request's worst case stays held for the linger.
   */
  const settleLingerMs = options.timings?.settleLingerMs ?? defaultTimings.settleLingerMs;
  interface Waiting {
    args: SettleArgs;
    resolve: () => void;
    reject: (err: unknown) => void;
  }
  let waiting: Waiting[] = [];
  let settleTimer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  const sendSettles = (): Promise<void> => {
    if (settleTimer) {
      if (settleLingerMs > 0) clearTimeout(settleTimer as NodeJS.Timeout);
      else clearImmediate(settleTimer as NodeJS.Immediate);
    }
    settleTimer = null;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return Promise.resolve();
    return store.settleMany(batch.map((w) => w.args)).then(
      (failed) => {
        for (const w of batch) {
          if (failed.has(w.args.requestId))
            w.reject(new Error(`spend hash of ${w.args.requestId} is not a hash`));
          else w.resolve();
        }
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  };
  let renewTimer: NodeJS.Timeout | null = null;
  const renewLeases = (): Promise<void> => {
    if (live.size === 0) {
      if (renewTimer) clearInterval(renewTimer);
      renewTimer = null;
      return Promise.resolve();
    }
    return store
      .renew(clock().getTime(), live.values())
      .then(({ overLimit }) => {
        for (const lease of overLimit) {
          const l = live.get(lease.requestId);
          if (!l) continue; // settled meanwhile
          live.delete(lease.requestId);
          l.reservation.onLost?.(
            l.keyTracked && l.limitUnits !== null && l.limitUnits !== undefined
              ? keyLimitExceeded(l.limitReset)
              : paymentRequired(),
          );
        }
      })
      .catch((err: unknown) => options.onBackgroundError?.(err));
  };
  /**
   * A renewal that starts after this call, before a rebuild (see admit): one sent earlier may have
   * reached Redis before it lost its data. Concurrent callers share: at most one renewal in flight
   * and one queued behind it for everyone who came while it ran (a process with thousands of streams
   * must not renew them once per key it rebuilds).
   */
  let renewing: Promise<void> | null = null;
  let renewQueued: Promise<void> | null = null;
  const renewBeforeRebuild = (): Promise<void> => {
    if (!renewing) {
      renewing = renewLeases().finally(() => {
        renewing = null;
      });
      return renewing;
    }
    renewQueued ??= renewing.then(() => {
      renewQueued = null;
      return renewBeforeRebuild();
    });
    return renewQueued;
  };
  const track = (lease: LiveLease) => {
    live.set(lease.requestId, lease);
    if (!renewTimer) {
      renewTimer = setInterval(() => void renewLeases(), leaseRenewMs);
      renewTimer.unref();
    }
  };

  const billing = createServiceClient({
    service: 'billing',
    url: options.billingUrl.replace(/\/+$/, ''),
    token: serviceTokenSource(options.signer, 'billing'),
    timeoutMs: options.rebuildTimeoutMs ?? 5_000,
    logger: options.logger,
    ownerErrors: 'unavailable',
    unavailableMessage: 'Spend counters are unavailable, retry shortly',
  });
  const callRebuild = async (accountId: string, keyId: string | null, at: Date) => {
    try {
      await billing.call({
        method: spendRebuild.method,
        path: spendRebuild.path,
        body: { account_id: accountId, key_id: keyId, at: at.toISOString() },
        response: spendRebuild.response,
      });
    } catch {
      // Whatever billing answered (the detail is logged by the client): the request cannot be checked.
      throw new AppError('service_unavailable', 'Spend counters are unavailable, retry shortly');
    }
  };

  /** One rebuild at a time per (account, key) in this process; concurrent callers share it. */
  const rebuild = (accountId: string, keyId: string | null, at: Date): Promise<void> => {
    const id = `${accountId}:${keyId ?? ''}`;
    let p = inflight.get(id);
    if (!p) {
      p = callRebuild(accountId, keyId, at).finally(() => inflight.delete(id));
      inflight.set(id, p);
    }
    return p;
  };

  const refreshInBackground = (accountId: string, keyId: string | null, at: Date) => {
    rebuild(accountId, keyId, at).catch((err: unknown) => options.onBackgroundError?.(err));
  };

  // Per-request work kept small (hot path): limits parsed once per distinct value.
  const limitUnitsCache = new Map<string, bigint>();
  const limitUnitsOf = (limit: string): bigint => {
    let units = limitUnitsCache.get(limit);
    if (units === undefined) {
      units = toUnits(limit);
      if (limitUnitsCache.size >= 10_000) limitUnitsCache.clear();
      limitUnitsCache.set(limit, units);
    }
    return units;
  };

  return {
    checks: true,
    async admit({ key, worstCaseCostUnits, requestId, check, worstCaseTokens }) {
      const tpm =
        key.scope === 'inference' && worstCaseTokens !== undefined ? (key.rateLimitTpm ?? null) : null;
      // Management keys carry no spend limit (spec §8.2).
      const limitUnits = key.limit !== null && key.scope !== 'management' ? limitUnitsOf(key.limit) : null;
      // The check runs once: after a rebuild the request is already counted (and its record checked).
      let pendingCheck = check;
      for (let attempt = 0; ; attempt++) {
        const at = clock();
        const period = periodKey(key.limitReset, at);
        const outcome = await store
          .admit({
            keyId: key.id,
            accountId: key.accountId,
            requestId,
            worstCaseUnits: worstCaseCostUnits < 0n ? 0n : worstCaseCostUnits,
            limitUnits,
            period,
            now: at.getTime(),
            check: pendingCheck,
            tokenRate:
              tpm === null
                ? undefined
                : {
                    counterKey: spendTokenRateKey(options.prefix, key.id, at.getTime()),
                    limit: tpm,
                    tokens: Math.max(0, Math.ceil(worstCaseTokens ?? 0)),
                    counterTtlMs: 120_000,
                  },
          })
          .catch(() => {
            // Redis unreachable: refuse (503) rather than admit unchecked spend.
            throw new AppError('service_unavailable', 'Spend counters are unavailable, retry shortly');
          });
        if (outcome.code === 'stale') throw new StaleKeyRecord();
        if (pendingCheck && outcome.count !== undefined) {
          pendingCheck.onCount(outcome.count);
          pendingCheck = undefined;
        }
        if (outcome.code === 'rate_limited') throw new KeyRateLimited();
        if (outcome.code === 'token_rate_limited') throw tokenRateLimited(tpm ?? 0, at.getTime());
        if (outcome.code === 'rebuild') {
          if (outcome.expiredPending > 0) options.onExpiredPending?.(outcome.expiredPending);
          if (attempt >= 2)
            throw new AppError('service_unavailable', 'Spend counters are unavailable, retry shortly');
          // A hash to rebuild may mean Redis lost its data (restart, flush) or the holds lapsed while
          // it was unreachable: this process's requests in flight hold their worst cases again first
          // (what the next renewal would do up to `leaseRenewMs` later), so the decision after the
          // rebuild counts them instead of admitting into their room.
          if (attempt === 0) await renewBeforeRebuild();
          await rebuild(key.accountId, outcome.key ? key.id : null, at);
          continue;
        }
        if (outcome.expiredPending > 0) options.onExpiredPending?.(outcome.expiredPending);
        if (outcome.staleKey || outcome.staleAccount) {
          refreshInBackground(key.accountId, outcome.staleKey ? key.id : null, at);
        }
        if (outcome.code === 'key_limit') throw keyLimitExceeded(key.limitReset);
        if (outcome.code === 'credits') throw paymentRequired();
        if (!outcome.keyTracked && !outcome.accountTracked) return null;
        const reservation: SpendReservation = {
          keyId: key.id,
          accountId: key.accountId,
          requestId,
          keyTracked: outcome.keyTracked,
          accountTracked: outcome.accountTracked,
        };
        track({
          ...reservation,
          units: worstCaseCostUnits < 0n ? 0n : worstCaseCostUnits,
          limitUnits,
          period,
          reservation,
          limitReset: key.limitReset,
        });
        return reservation;
      }
    },

    settle(reservation, costUnits) {
      if (!reservation) return Promise.resolve();
      live.delete(reservation.requestId);
      if (!reservation.keyTracked && !reservation.accountTracked) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ args: { ...reservation, costUnits, now: clock().getTime() }, resolve, reject });
        if (waiting.length >= SETTLE_BATCH) void sendSettles();
        else if (!settleTimer) {
          settleTimer =
            settleLingerMs > 0
              ? setTimeout(() => void sendSettles(), settleLingerMs)
              : setImmediate(() => void sendSettles());
        }
      });
    },

    flush: () => sendSettles(),
  };
}
