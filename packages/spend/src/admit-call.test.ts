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
      staleKey: true,
      staleAccount: false,
      expiredPending: 2,
    });
    expect(admitResult([1, 0, 0, 0, 1, 0], false)).toEqual({
      code: 'key_limit',
      staleKey: false,
      staleAccount: true,
      expiredPending: 0,
    });
    expect(admitResult([2, 0, 0, 0, 0, 0], false)).toMatchObject({ code: 'credits' });
    expect(admitResult([3, 0, 0, 1, 0, 1], false)).toEqual({
      code: 'rebuild',
      key: true,
      account: false,
      expiredPending: 1,
    });
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
