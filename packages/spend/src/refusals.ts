import { AppError } from '@tollgate/errors';
import type { LimitReset } from '@tollgate/money';

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

/** 403 (Messages API: 402): the team's spend limit (issue 29), reported like the key's. */
export const teamLimitExceeded = (reset: LimitReset | null, teamId: string) => {
  const word = PERIOD_WORD[String(reset)] ?? 'total';
  return new AppError(
    'team_limit_exceeded',
    `This request could exceed the team's ${word} spend limit (spent so far by the team's keys + requests in flight + this request's worst-case cost); lower max_tokens or raise the team's limit`,
    { limit_reset: reset, period: word, team_id: teamId },
  );
};

/** 429: this minute's tokens of the key's team plus the request's worst case exceed the team's `rate_limit_tpm`. */
export const teamTokenRateLimited = (limit: number, nowMs: number, teamId: string) => {
  const retryAfter = Math.max(1, Math.ceil((60_000 - (nowMs % 60_000)) / 1000));
  return new AppError(
    'rate_limited',
    `This key's team is limited to ${limit} tokens per minute across its keys (rate_limit_tpm of the team, counted with each request's worst case: prompt + max_tokens); retry in ${retryAfter} s or lower max_tokens`,
    { limit, interval: '1m', reason: 'team_tpm', team_id: teamId, retry_after_seconds: retryAfter },
  );
};

/** 429: this minute's tokens of the key plus the request's worst case exceed its `rate_limit_tpm`. */
export const tokenRateLimited = (limit: number, nowMs: number) => {
  const retryAfter = Math.max(1, Math.ceil((60_000 - (nowMs % 60_000)) / 1000));
  return new AppError(
    'rate_limited',
    `This key is limited to ${limit} tokens per minute (rate_limit_tpm, counted with each request's worst case: prompt + max_tokens); retry in ${retryAfter} s or lower max_tokens`,
    { limit, interval: '1m', reason: 'tpm', retry_after_seconds: retryAfter },
  );
};

export const paymentRequired = () =>
  new AppError('payment_required', 'The account has no credits left: add credits to continue');

/** 503: the counters cannot be read or rebuilt; never admit on a counter read as zero. */
export const spendUnavailable = () =>
  new AppError('service_unavailable', 'Spend counters are unavailable, retry shortly');
