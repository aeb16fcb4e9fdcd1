import { randomUUID } from 'node:crypto';
import { toUnits } from '@tollgate/money';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createSpendStore,
  type SpendStore,
  spendAccountHash,
  spendKeyHash,
  spendTeamHash,
  spendTeamTokenRateKey,
  spendTokenRateKey,
} from './store';
import type { AdmitArgs } from './store-types';

/**
 * Issue 29: the team as a third owner in the admission script (real Redis): its limit checked and its
 * hold made in the same atomic step as the key's and the account's, settled, committed, renewed and
 * rebuilt like a key's; and the tokens-per-minute counters (key and team) corrected at settle.
 */
let r: TestRedis;
let store: SpendStore;
let accountId: string;
let teamId: string;
const NOW = Date.UTC(2026, 10, 20, 12, 0, 10);
const MONTH = 'm2026-11';
const DAY = 'd2026-11-20';
const usd = (s: string) => toUnits(s);
const current = { d: DAY, w: 'w2026-W47', m: MONTH };

beforeAll(async () => {
  r = await createTestRedis();
  store = createSpendStore(r.client, { prefix: r.prefix, timings: { gcIntervalMs: 0 } });
});
afterAll(async () => {
  await r.cleanup();
});
beforeEach(async () => {
  accountId = randomUUID();
  teamId = randomUUID();
  await store.beginRebuild({ accountId, team: { accountId, teamId } }, NOW);
  await store.loadAccount(accountId, NOW, {
    usageUnits: 0n,
    creditsUnits: usd('1000'),
    postpaid: false,
    version: 1,
  });
  await store.loadTeam({ accountId, teamId }, NOW, current, [[MONTH, usd('0')]]);
});

const teamHash = () => spendTeamHash(r.prefix, accountId, teamId);
const reqId = () => `gen-1-${randomUUID().replaceAll('-', '').slice(0, 20)}`;
const admit = (keyId: string, worst: string, teamLimit: string | null, extra: Partial<AdmitArgs> = {}) =>
  store.admit({
    keyId,
    accountId,
    requestId: reqId(),
    worstCaseUnits: usd(worst),
    limitUnits: null,
    period: DAY,
    now: NOW,
    ...(teamLimit === null ? {} : { team: { teamId, limitUnits: usd(teamLimit), period: MONTH } }),
    ...extra,
  });

describe('team limit in the admission script', () => {
  it('concurrent requests of several keys of one team never hold more than the team limit', async () => {
    const keys = Array.from({ length: 5 }, () => randomUUID());
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, i) => admit(keys[i % keys.length] as string, '0.3', '5')),
    );
    const admitted = outcomes.filter((o) => o.code === 'admitted');
    expect(admitted).toHaveLength(16); // floor(5 / 0.3)
    expect(outcomes.filter((o) => o.code === 'team_limit')).toHaveLength(44);
    expect(admitted.every((o) => o.code === 'admitted' && o.teamTracked)).toBe(true);
    expect(await r.client.hget(teamHash(), '_held')).toBe(usd('4.8').toString());
  });

  it('counts the committed team spend of the period and refuses with team_limit, holding nothing anywhere', async () => {
    await store.loadTeam({ accountId, teamId }, NOW, current, [[MONTH, usd('4.5')]]);
    const keyId = randomUUID();
    const acctHeld = await r.client.hget(spendAccountHash(r.prefix, accountId), '_held');
    expect(await admit(keyId, '0.6', '5')).toMatchObject({
      code: 'team_limit',
      staleTeam: false,
    });
    expect(await r.client.hget(teamHash(), '_held')).toBeNull();
    expect(await r.client.hget(spendAccountHash(r.prefix, accountId), '_held')).toBe(acctHeld);
    expect(await r.client.exists(spendKeyHash(r.prefix, keyId))).toBe(0);
    expect((await admit(keyId, '0.5', '5')).code).toBe('admitted');
    // A key with a limit of its own needs its hash too (rebuilt, like the team's).
    expect((await admit(keyId, '0.1', '5', { limitUnits: usd('0.01') })).code).toBe('rebuild');
  });

  it('asks for the team hash to be rebuilt when it is missing, never reading it as zero', async () => {
    await r.client.del(teamHash());
    expect(await admit(randomUUID(), '0.1', '5')).toEqual({
      code: 'rebuild',
      key: false,
      account: false,
      team: true,
      expiredPending: 0,
    });
    // A team without a limit holds nothing and needs no team hash.
    expect((await admit(randomUUID(), '0.1', null)).code).toBe('admitted');
  });

  it('settles into a pending cost on the team hash, which the worker commit clears while raising the total', async () => {
    const keyId = randomUUID();
    const requestId = reqId();
    const admitted = await store.admit({
      keyId,
      accountId,
      requestId,
      worstCaseUnits: usd('2'),
      limitUnits: null,
      period: DAY,
      now: NOW,
      team: { teamId, limitUnits: usd('5'), period: MONTH },
    });
    expect(admitted).toMatchObject({ code: 'admitted', teamTracked: true, keyTracked: false });
    await store.settle({
      keyId,
      accountId,
      requestId,
      costUnits: usd('0.25'),
      keyTracked: false,
      accountTracked: true,
      team: { teamId },
      now: NOW,
    });
    expect(await r.client.hget(teamHash(), `p:${requestId}`)).toMatch(/^2500000000\|/);
    expect(await r.client.hget(teamHash(), '_held')).toBe(usd('0.25').toString());
    await store.applyCommitted(
      NOW,
      [{ keyId: teamId, teamOfAccount: accountId, totals: [[MONTH, usd('0.25')]], requestIds: [requestId] }],
      [],
    );
    expect(await r.client.hget(teamHash(), `p:${requestId}`)).toBeNull();
    expect(await r.client.hget(teamHash(), '_held')).toBe('0');
    expect(await r.client.hget(teamHash(), MONTH)).toBe(usd('0.25').toString());
  });

  it('renews a team lease, and reports a lapsed one that no longer fits the team as over the team', async () => {
    const keyId = randomUUID();
    const requestId = reqId();
    expect((await admit(keyId, '3', '5', { requestId })).code).toBe('admitted');
    const lease = {
      keyId,
      accountId,
      requestId,
      keyTracked: false,
      accountTracked: true,
      units: usd('3'),
      team: { teamId, limitUnits: usd('5'), period: MONTH },
    };
    expect((await store.renew(NOW + 1_000, [lease])).renewed).toBe(2); // team hash and account hash
    // The lease lapses and is swept; others take the room; the late renewal holds it again: over.
    const sweeper = createSpendStore(r.client, { prefix: r.prefix, timings: { gcIntervalMs: 0 } });
    const later = NOW + 20_000;
    expect((await sweeper.admit({ ...baseArgs(keyId), now: later })).code).toBe('rebuild');
    await store.loadTeam({ accountId, teamId }, later, current, [[MONTH, usd('0')]]);
    await store.loadAccount(accountId, later, {
      usageUnits: 0n,
      creditsUnits: usd('1000'),
      postpaid: false,
      version: 1,
    });
    expect((await sweeper.admit({ ...baseArgs(keyId), now: later, worstCaseUnits: usd('4') })).code).toBe(
      'admitted',
    );
    const result = await store.renew(later + 1, [lease]);
    expect(result.overLimit).toEqual([lease]);
    expect(result.overTeam.has(lease)).toBe(true);
  });
});

const baseArgs = (keyId: string): AdmitArgs => ({
  keyId,
  accountId,
  requestId: reqId(),
  worstCaseUnits: usd('1'),
  limitUnits: null,
  period: DAY,
  now: NOW,
  team: { teamId, limitUnits: usd('5'), period: MONTH },
});

describe('tokens per minute of a team, and the correction at settle', () => {
  const teamCounter = () => spendTeamTokenRateKey(r.prefix, accountId, teamId, NOW);
  const charge = (counterKey: string, tokens: number, limit = 1000) => ({
    counterKey,
    limit,
    tokens,
    counterTtlMs: 120_000,
  });

  it("charges the team's counter for every key of the team and refuses past it, charging nothing", async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    expect((await admit(a, '0.01', null, { teamTokenRate: charge(teamCounter(), 600) })).code).toBe(
      'admitted',
    );
    expect((await admit(b, '0.01', null, { teamTokenRate: charge(teamCounter(), 400) })).code).toBe(
      'admitted',
    );
    expect(await r.client.get(teamCounter())).toBe('1000');
    const keyCounter = spendTokenRateKey(r.prefix, b, NOW);
    expect(
      await admit(b, '0.01', null, {
        tokenRate: charge(keyCounter, 1),
        teamTokenRate: charge(teamCounter(), 1),
      }),
    ).toMatchObject({ code: 'team_token_rate_limited' });
    expect(await r.client.get(keyCounter)).toBeNull();
    expect(await r.client.get(teamCounter())).toBe('1000');
  });

  it('gives back the unused part of the worst case at settle, on key and team counters, so more fits', async () => {
    const keyId = randomUUID();
    const keyCounter = spendTokenRateKey(r.prefix, keyId, NOW);
    const requestId = reqId();
    const both = { tokenRate: charge(keyCounter, 900), teamTokenRate: charge(teamCounter(), 900) };
    expect((await admit(keyId, '0.01', null, { requestId, ...both })).code).toBe('admitted');
    expect((await admit(keyId, '0.01', null, { ...both, tokenRate: charge(keyCounter, 200) })).code).toBe(
      'token_rate_limited',
    );
    await store.settle({
      keyId,
      accountId,
      requestId,
      costUnits: usd('0.001'),
      keyTracked: false,
      accountTracked: true,
      now: NOW,
      tokenRefund: { counterKeys: [keyCounter, teamCounter()], tokens: 750 },
    });
    expect(await r.client.get(keyCounter)).toBe('150');
    expect(await r.client.get(teamCounter())).toBe('150');
    expect((await r.client.pttl(keyCounter)) > 100_000).toBe(true);
    expect((await admit(keyId, '0.01', null, { ...both, tokenRate: charge(keyCounter, 800) })).code).toBe(
      'admitted',
    );
  });

  it('never takes a counter below zero, and leaves an expired one absent', async () => {
    const keyId = randomUUID();
    const keyCounter = spendTokenRateKey(r.prefix, keyId, NOW);
    await r.client.set(keyCounter, '100', 'PX', 120_000);
    const gone = spendTokenRateKey(r.prefix, keyId, NOW - 180_000);
    await store.settle({
      keyId,
      accountId,
      requestId: reqId(),
      costUnits: 0n,
      keyTracked: false,
      accountTracked: false,
      now: NOW,
      tokenRefund: { counterKeys: [keyCounter, gone], tokens: 400 },
    });
    expect(await r.client.get(keyCounter)).toBe('0');
    expect(await r.client.exists(gone)).toBe(0);
  });
});
