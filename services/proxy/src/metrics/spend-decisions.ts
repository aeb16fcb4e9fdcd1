import { KeyRateLimited, type SpendGuard, StaleKeyRecord } from '../spend/guard';
import type { SpendSeries } from './definitions';

/** The decision label of a refused admission, by the error's type. */
export function refusalDecision(err: unknown): string {
  switch ((err as { type?: unknown }).type) {
    case 'key_limit_exceeded':
      return 'key_limit';
    case 'team_limit_exceeded':
      return 'team_limit';
    case 'payment_required':
      return 'credits';
    case 'rate_limited':
      return 'token_rate';
    default:
      return 'unavailable';
  }
}

/** The spend guard with its decisions counted (admitted / untracked / key_limit / credits / unavailable). */
export function instrumentGuard(guard: SpendGuard, series: SpendSeries): SpendGuard {
  const { decisions } = series;
  return {
    checks: guard.checks,
    async admit(input) {
      try {
        const reservation = await guard.admit(input);
        decisions.labels(reservation ? 'admitted' : 'untracked').inc();
        return reservation;
      } catch (err) {
        // A recalled key record's check: no spend decision was made (the request is authenticated
        // afresh, or refused by its rate limit).
        if (err instanceof StaleKeyRecord || err instanceof KeyRateLimited) throw err;
        decisions.labels(refusalDecision(err)).inc();
        throw err;
      }
    },
    settle: (reservation, costUnits, tokensUsed) => guard.settle(reservation, costUnits, tokensUsed),
    flush: () => guard.flush?.() ?? Promise.resolve(),
  };
}
