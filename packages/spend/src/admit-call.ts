import type { AdmitArgs, AdmitOutcome } from './store-types';
import type { SpendTimings } from './timings';

/**
 * The admission script's call (lua/admit.lua): its KEYS and ARGV for one admission, and its reply
 * decoded. KEYS: key hash, account hash, then with a `check` the key record and its rate-window
 * counter, then with a `tokenRate` the key's tokens-per-minute counter. ARGV: the admission, the
 * timings, then the check's three values (blank when only a token rate is charged), then the token
 * rate's three values.
 */
export function admitCall(
  a: AdmitArgs,
  hashes: { key: string; account: string },
  t: SpendTimings,
): { keys: string[]; args: Array<string | number> } {
  const c = a.check;
  const tr = a.tokenRate;
  const keys = [hashes.key, hashes.account];
  if (c) keys.push(c.recordKey, c.counterKey);
  if (tr) keys.push(tr.counterKey);
  const args: Array<string | number> = [
    a.now,
    a.requestId,
    a.worstCaseUnits.toString(),
    a.limitUnits === null ? '' : a.limitUnits.toString(),
    a.period,
    t.reservationTtlMs,
    t.keyRefreshMs,
    t.accountRefreshMs,
    t.gcIntervalMs,
    t.hashTtlSeconds,
  ];
  if (c) args.push(c.version, c.counterTtlMs, c.rateLimit === null ? '' : c.rateLimit);
  else if (tr) args.push('', '', '');
  if (tr) args.push(tr.limit, tr.tokens, tr.counterTtlMs);
  return { keys, args };
}

/**
 * The admission script's reply: `{code, keyTracked, accountTracked, flag1, flag2, expiredPending,
 * count}`; with a `check`, `count` is the request's number in its key's rate-limit window.
 */
export function admitResult(r: number[], checked: boolean): AdmitOutcome & { count?: number } {
  const outcome = admitOutcome(r);
  return checked ? Object.assign(outcome, { count: Number(r[6] ?? 0) }) : outcome;
}

function admitOutcome(r: number[]): AdmitOutcome {
  const [code, k, acc, f1, f2, expired] = r;
  const expiredPending = expired ?? 0;
  switch (code) {
    case 4:
      return { code: 'stale' };
    case 5:
      return { code: 'rate_limited' };
    case 6:
      return { code: 'token_rate_limited' };
    case 0:
      return {
        code: 'admitted',
        keyTracked: k === 1,
        accountTracked: acc === 1,
        staleKey: f1 === 1,
        staleAccount: f2 === 1,
        expiredPending,
      };
    case 1:
      return { code: 'key_limit', staleKey: f1 === 1, staleAccount: f2 === 1, expiredPending };
    case 2:
      return { code: 'credits', staleKey: f1 === 1, staleAccount: f2 === 1, expiredPending };
    default:
      return { code: 'rebuild', key: f1 === 1, account: f2 === 1, expiredPending };
  }
}
