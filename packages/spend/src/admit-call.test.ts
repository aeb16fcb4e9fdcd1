import { describe, expect, it } from 'vitest';
import { admitCall, admitResult } from './admit-call';
import { defaultTimings } from './timings';

const base = {
  keyId: 'k',
  accountId: 'a',
  requestId: 'gen-1-r',
  worstCaseUnits: 5n,
  limitUnits: 100n,
  period: 'd2026-11-20',
  now: 1000,
};
const hashes = { key: 'p:spend:key:k', account: 'p:spend:acct:a' };
const t = defaultTimings;
const timingArgs = [t.reservationTtlMs, t.keyRefreshMs, t.accountRefreshMs, t.gcIntervalMs, t.hashTtlSeconds];
const check = { recordKey: 'rec', version: 3, counterKey: 'ctr', counterTtlMs: 60_000, rateLimit: 10 };
const tokenRate = { counterKey: 'tpm', limit: 1000, tokens: 40, counterTtlMs: 120_000 };

describe('admitCall', () => {
  it('plain admission: the two hashes and ten arguments, a null limit as an empty string', () => {
    expect(admitCall({ ...base, limitUnits: null }, hashes, t)).toEqual({
      keys: [hashes.key, hashes.account],
      args: [1000, 'gen-1-r', '5', '', 'd2026-11-20', ...timingArgs],
    });
  });

  it('a check adds the record and counter keys and their three values (no rate limit = empty)', () => {
    const call = admitCall({ ...base, check: { ...check, rateLimit: null } }, hashes, t);
    expect(call.keys).toEqual([hashes.key, hashes.account, 'rec', 'ctr']);
    expect(call.args.slice(10)).toEqual([3, 60_000, '']);
  });

  it('a token rate without a check leaves the check slots blank so its values keep their place', () => {
    const call = admitCall({ ...base, tokenRate }, hashes, t);
    expect(call.keys).toEqual([hashes.key, hashes.account, 'tpm']);
    expect(call.args.slice(10)).toEqual(['', '', '', 1000, 40, 120_000]);
  });

  it('a team (issue 29): its hash after the token counter, its limit and period at 17 and 18', () => {
    const team = { teamId: 't', limitUnits: 50n, period: 'm2026-11' };
    const call = admitCall({ ...base, team }, { ...hashes, team: 'p:spend:team:{a}:t' }, t);
    expect(call.keys).toEqual([hashes.key, hashes.account, 'p:spend:team:{a}:t']);
    expect(call.args.slice(10)).toEqual(['', '', '', '', '', '', '50', 'm2026-11']);
    const teamTokenRate = { counterKey: 'ttpm', limit: 500, tokens: 40, counterTtlMs: 120_000 };
    const all = admitCall({ ...base, check, tokenRate, team, teamTokenRate }, { ...hashes, team: 'th' }, t);
    expect(all.keys).toEqual([hashes.key, hashes.account, 'rec', 'ctr', 'tpm', 'th', 'ttpm']);
    expect(all.args.slice(10)).toEqual([3, 60_000, 10, 1000, 40, 120_000, '50', 'm2026-11', 500]);
    // Only the team's token rate: the key's limit slot blank, the worst-case tokens still sent.
    const only = admitCall({ ...base, teamTokenRate }, hashes, t);
    expect(only.keys).toEqual([hashes.key, hashes.account, 'ttpm']);
    expect(only.args.slice(10)).toEqual(['', '', '', '', 40, 120_000, '', '', 500]);
  });

  it('both: record, counter, then the token counter', () => {
    const call = admitCall({ ...base, check, tokenRate }, hashes, t);
    expect(call.keys).toEqual([hashes.key, hashes.account, 'rec', 'ctr', 'tpm']);
    expect(call.args.slice(10)).toEqual([3, 60_000, 10, 1000, 40, 120_000]);
  });
});

describe('admitResult', () => {
  it('decodes every code of the script', () => {
    expect(admitResult([0, 1, 0, 1, 0, 2], false)).toEqual({
      code: 'admitted',
      keyTracked: true,
      accountTracked: false,
      teamTracked: false,
      staleKey: true,
      staleAccount: false,
      staleTeam: false,
      expiredPending: 2,
    });
    expect(admitResult([1, 0, 0, 0, 1, 0], false)).toEqual({
      code: 'key_limit',
      staleKey: false,
      staleAccount: true,
      staleTeam: false,
      expiredPending: 0,
    });
    expect(admitResult([2, 0, 0, 0, 0, 0], false)).toMatchObject({ code: 'credits' });
    expect(admitResult([3, 0, 0, 1, 0, 1], false)).toEqual({
      code: 'rebuild',
      key: true,
      account: false,
      team: false,
      expiredPending: 1,
    });
    expect(admitResult([3, 0, 0, 0, 0, 0, 0, 1], false)).toMatchObject({ code: 'rebuild', team: true });
    expect(admitResult([7, 0, 0, 0, 0, 0, 0, 0, 1], false)).toEqual({
      code: 'team_limit',
      staleKey: false,
      staleAccount: false,
      staleTeam: true,
      expiredPending: 0,
    });
    expect(admitResult([0, 0, 1, 0, 0, 0, 0, 1, 0], false)).toMatchObject({ teamTracked: true });
    expect(admitResult([8], false)).toEqual({ code: 'team_token_rate_limited' });
    expect(admitResult([4], false)).toEqual({ code: 'stale' });
    expect(admitResult([5], false)).toEqual({ code: 'rate_limited' });
    expect(admitResult([6], false)).toEqual({ code: 'token_rate_limited' });
  });

  it('adds the rate-window count only for a checked admission', () => {
    expect(admitResult([5, 0, 0, 0, 0, 0, 11], true)).toEqual({ code: 'rate_limited', count: 11 });
    expect(admitResult([4], true)).toEqual({ code: 'stale', count: 0 });
    expect(admitResult([5, 0, 0, 0, 0, 0, 11], false)).not.toHaveProperty('count');
  });
});
