import type { CachedKey } from '@tollgate/key-cache';
import { periodKey } from '@tollgate/money';
import type { RedisSpendGuardOptions, SpendCheck, SpendGuard, SpendReservation } from './guard-types';
import { spendTeamTokenRateKey, spendTokenRateKey } from './keys';
import { createLeaseRenewer } from './lease-renewer';
import { limitUnitsParser } from './limit-units';
import { billingRebuild, sharedRebuild } from './rebuild';
import {
  KeyRateLimited,
  keyLimitExceeded,
  paymentRequired,
  StaleKeyRecord,
  spendUnavailable,
  teamLimitExceeded,
  teamTokenRateLimited,
  tokenRateLimited,
} from './refusals';
import { createSettleBatcher } from './settle-batcher';
import { createSpendStore } from './store';
import type { AdmitArgs } from './store-types';
import { defaultTimings } from './timings';

export type { RedisSpendGuardOptions, SpendCheck, SpendGuard, SpendReservation } from './guard-types';
export { KeyRateLimited, keyLimitExceeded, paymentRequired, StaleKeyRecord } from './refusals';

/** Tokens-per-minute counters live two windows (the current minute and the one before). */
const TOKEN_RATE_TTL_MS = 120_000;

/**
 * The spend guard the proxy calls around every chat completion. One Lua call per admit (checks the
 * key's limit for its current period and the account's credits, then reserves the worst case), one
 * per batch of settles (turns each reservation into a pending cost until the billing worker counts
 * it). A missing hash (Redis flushed, evicted, expired) is rebuilt from Postgres through billing
 * before deciding; if billing cannot be reached the request is refused with 503, never admitted on a
 * counter read as zero. Its parts: the lease renewer (lease-renewer.ts), the settle batcher
 * (settle-batcher.ts), the rebuild through billing (rebuild.ts).
 */
export function createRedisSpendGuard(options: RedisSpendGuardOptions): SpendGuard {
  const clock = options.clock ?? (() => new Date());
  const store = createSpendStore(options.redis, { prefix: options.prefix, timings: options.timings });
  const leases = createLeaseRenewer({
    store,
    clock,
    leaseRenewMs: options.timings?.leaseRenewMs ?? defaultTimings.leaseRenewMs,
    onBackgroundError: options.onBackgroundError,
  });
  const settles = createSettleBatcher({
    store,
    lingerMs: options.timings?.settleLingerMs ?? defaultTimings.settleLingerMs,
  });
  const rebuild = sharedRebuild(
    billingRebuild({
      billingUrl: options.billingUrl,
      signer: options.signer,
      timeoutMs: options.rebuildTimeoutMs,
      logger: options.logger,
    }),
  );
  const limitUnitsOf = limitUnitsParser();

  return {
    checks: true,
    async admit({ key, worstCaseCostUnits, requestId, check, worstCaseTokens }) {
      const rated = key.scope === 'inference' && worstCaseTokens !== undefined;
      const tpm = rated ? (key.rateLimitTpm ?? null) : null;
      // The key's team (issue 29): a third owner with its spend limit and tokens per minute.
      const teamId = key.scope === 'inference' ? (key.teamId ?? null) : null;
      const teamTpm = rated && teamId ? (key.teamRateLimitTpm ?? null) : null;
      const teamLimit = teamId && key.teamLimit != null ? limitUnitsOf(key.teamLimit) : null;
      // Management keys carry no spend limit (spec §8.2).
      const limitUnits = key.limit !== null && key.scope !== 'management' ? limitUnitsOf(key.limit) : null;
      const worstCaseUnits = worstCaseCostUnits < 0n ? 0n : worstCaseCostUnits;
      // The check runs once: after a rebuild the request is already counted (and its record checked).
      let pendingCheck: SpendCheck | undefined = check;
      for (let attempt = 0; ; attempt++) {
        const at = clock();
        const args = admitArgs(key, { requestId, worstCaseUnits, limitUnits, at });
        args.check = pendingCheck;
        if (tpm !== null)
          args.tokenRate = tokenRate(
            spendTokenRateKey(options.prefix, key.accountId, key.id, at.getTime()),
            tpm,
            worstCaseTokens,
          );
        if (teamId && teamLimit !== null)
          args.team = { teamId, limitUnits: teamLimit, period: periodKey(key.teamLimitReset ?? null, at) };
        if (teamId && teamTpm !== null) {
          const counter = spendTeamTokenRateKey(options.prefix, key.accountId, teamId, at.getTime());
          args.teamTokenRate = tokenRate(counter, teamTpm, worstCaseTokens);
        }
        // Settles waiting for their batch go first, in this call's write (settle-batcher.ts `ride`):
        // no timer, write or reply of their own, and the admission sees their holds released.
        settles.ride();
        const outcome = await store.admit(args).catch((err: unknown) => {
          // Redis unreachable: refuse (503) rather than admit unchecked spend.
          options.logger?.warn({ err, requestId }, 'spend admission failed: refused as unavailable');
          throw spendUnavailable();
        });
        if (outcome.code === 'stale') throw new StaleKeyRecord();
        if (pendingCheck && outcome.count !== undefined) {
          pendingCheck.onCount(outcome.count);
          pendingCheck = undefined;
        }
        if (outcome.code === 'rate_limited') throw new KeyRateLimited();
        if (outcome.code === 'token_rate_limited') throw tokenRateLimited(tpm ?? 0, at.getTime());
        if (outcome.code === 'team_token_rate_limited')
          throw teamTokenRateLimited(teamTpm ?? 0, at.getTime(), teamId ?? '');
        if (outcome.expiredPending > 0) options.onExpiredPending?.(outcome.expiredPending);
        if (outcome.code === 'rebuild') {
          if (attempt >= 2) throw spendUnavailable();
          // A hash to rebuild may mean Redis lost its data (restart, flush) or the holds lapsed while
          // it was unreachable: this process's requests in flight hold their worst cases again first
          // (what the next renewal would do up to `leaseRenewMs` later), so the decision after the
          // rebuild counts them instead of admitting into their room.
          if (attempt === 0) await leases.renewBeforeRebuild();
          await rebuild(key.accountId, outcome.key ? key.id : null, at, outcome.team ? teamId : null);
          continue;
        }
        if (outcome.staleKey || outcome.staleAccount || outcome.staleTeam) {
          const staleTeam = outcome.staleTeam ? teamId : null;
          rebuild(key.accountId, outcome.staleKey ? key.id : null, at, staleTeam).catch((err: unknown) =>
            options.onBackgroundError?.(err),
          );
        }
        if (outcome.code !== 'admitted')
          throw outcome.code === 'key_limit'
            ? keyLimitExceeded(key.limitReset)
            : outcome.code === 'team_limit'
              ? teamLimitExceeded(key.teamLimitReset ?? null, teamId ?? '')
              : paymentRequired();
        const charged = [args.tokenRate, args.teamTokenRate].filter((c) => c !== undefined);
        const tokens = charged[0]?.tokens ?? 0;
        const team = outcome.teamTracked && args.team ? args.team : undefined;
        if (!outcome.keyTracked && !outcome.accountTracked && !team && tokens === 0) return null;
        const reservation: SpendReservation = {
          keyId: key.id,
          accountId: key.accountId,
          requestId,
          keyTracked: outcome.keyTracked,
          accountTracked: outcome.accountTracked,
          ...(team ? { team: { teamId: team.teamId } } : {}),
          ...(tokens > 0 ? { tokenCharge: { counterKeys: charged.map((c) => c.counterKey), tokens } } : {}),
        };
        if (outcome.keyTracked || outcome.accountTracked || team)
          leases.track({
            ...reservation,
            units: worstCaseUnits,
            limitUnits,
            period: args.period,
            team,
            reservation,
            limitReset: key.limitReset,
            teamLimitReset: key.teamLimitReset ?? null,
          });
        return reservation;
      }
    },

    settle(reservation, costUnits, tokensUsed) {
      if (!reservation) return Promise.resolve();
      leases.release(reservation.requestId);
      // The token-rate charge corrected to the tokens used (issue 29), in the settle's own call.
      const c = reservation.tokenCharge;
      const back = c && tokensUsed !== undefined ? c.tokens - Math.max(0, Math.ceil(tokensUsed)) : 0;
      const tokenRefund = c && back > 0 ? { counterKeys: c.counterKeys, tokens: back } : undefined;
      if (!reservation.keyTracked && !reservation.accountTracked && !reservation.team && !tokenRefund)
        return Promise.resolve();
      return settles.settle({ ...reservation, costUnits, now: clock().getTime(), tokenRefund });
    },

    flush: () => settles.flush(),
  };
}

/** The store admission of one attempt at `at` (its period is the key's limit period holding `at`). */
function admitArgs(
  key: CachedKey,
  a: { requestId: string; worstCaseUnits: bigint; limitUnits: bigint | null; at: Date },
): AdmitArgs {
  return {
    keyId: key.id,
    accountId: key.accountId,
    requestId: a.requestId,
    worstCaseUnits: a.worstCaseUnits,
    limitUnits: a.limitUnits,
    period: periodKey(key.limitReset, a.at),
    now: a.at.getTime(),
  };
}

/** A tokens-per-minute charge on `counterKey` (the key's or the team's counter of the current minute). */
function tokenRate(counterKey: string, limit: number, tokens: number | undefined) {
  return {
    counterKey,
    limit,
    tokens: Math.max(0, Math.ceil(tokens ?? 0)),
    counterTtlMs: TOKEN_RATE_TTL_MS,
  };
}
