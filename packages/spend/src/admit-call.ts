import type { AdmitArgs, AdmitOutcome } from './store-types';
import type { SpendTimings } from './timings';

/**
 * The admission script's call (lua/admit.lua): its KEYS and ARGV for one admission, and its reply
 * decoded. KEYS: key hash, account hash, then with a `check` the key record and its rate-window
 * counter, then with a `tokenRate` the key's tokens-per-minute counter, with a `team` the team's hash,
 * with a `teamTokenRate` the team's tokens-per-minute counter. ARGV (positions fixed, see admit.lua):
 * the admission, the timings, the check's three values, the token rate's three, the team's limit and
 * period, the team's tokens-per-minute limit; empty trailing values are left off.
 */
export function admitCall(
  a: AdmitArgs,
  hashes: { key: string; account: string; team?: string },
  t: SpendTimings,
): { keys: string[]; args: Array<string | number> } {
  const c = a.check;
  const tr = a.tokenRate;
  const team = a.team && hashes.team ? a.team : undefined;
  const ttr = a.teamTokenRate;
  const keys = [hashes.key, hashes.account];
  if (c) keys.push(c.recordKey, c.counterKey);
  if (tr) keys.push(tr.counterKey);
  if (team) keys.push(hashes.team as string);
  if (ttr) keys.push(ttr.counterKey);
  const tokens = tr ?? ttr;
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
    ...(c ? [c.version, c.counterTtlMs, c.rateLimit === null ? '' : c.rateLimit] : ['', '', '']),
    tr ? tr.limit : '',
    tokens ? tokens.tokens : '',
    tokens ? tokens.counterTtlMs : '',
    team ? team.limitUnits.toString() : '',
    team ? team.period : '',
    ttr ? ttr.limit : '',
  ];
  // Trailing blanks left off: the team's values, the token rate's, the check's (all three or none).
  while (args.length > 13 && args[args.length - 1] === '') args.pop();
  if (!c && args.length === 13) args.length = 10;
  return { keys, args };
}

/**
 * The admission script's reply: `{code, keyTracked, accountTracked, flag1, flag2, expiredPending,
 * count, teamTracked or teamFlag, staleTeam}`; with a `check`, `count` is the request's number in its
 * key's rate-limit window.
 */
export function admitResult(r: number[], checked: boolean): AdmitOutcome & { count?: number } {
  const outcome = admitOutcome(r);
  return checked ? Object.assign(outcome, { count: Number(r[6] ?? 0) }) : outcome;
}

const REFUSED = { 1: 'key_limit', 2: 'credits', 7: 'team_limit' } as const;

function admitOutcome(r: number[]): AdmitOutcome {
  const [code, k, acc, f1, f2, expired, , team, staleTeam] = r;
  const expiredPending = expired ?? 0;
  switch (code) {
    case 4:
      return { code: 'stale' };
    case 5:
      return { code: 'rate_limited' };
    case 6:
      return { code: 'token_rate_limited' };
    case 8:
      return { code: 'team_token_rate_limited' };
    case 0:
      return {
        code: 'admitted',
        keyTracked: k === 1,
        accountTracked: acc === 1,
        teamTracked: team === 1,
        staleKey: f1 === 1,
        staleAccount: f2 === 1,
        staleTeam: staleTeam === 1,
        expiredPending,
      };
    case 1:
    case 2:
    case 7:
      return {
        code: REFUSED[code],
        staleKey: f1 === 1,
        staleAccount: f2 === 1,
        staleTeam: staleTeam === 1,
        expiredPending,
      };
    default:
      return { code: 'rebuild', key: f1 === 1, account: f2 === 1, team: team === 1, expiredPending };
  }
}
