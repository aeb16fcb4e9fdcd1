import { randomUUID } from 'node:crypto';
import { toUnits } from '@tollgate/money';
import { createRedisClient } from '@tollgate/redis';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSpendStore, type SpendStore, spendAccountHash, spendKeyHash } from './store';

let r: TestRedis;
let store: SpendStore;
let keyId: string;
let accountId: string;
const NOW = Date.UTC(2026, 10, 20, 12);
const DAY = 'd2026-11-20';
const usd = (s: string) => toUnits(s);

beforeAll(async () => {
  r = await createTestRedis();
  store = createSpendStore(r.client, { prefix: r.prefix, timings: { gcIntervalMs: 0 } });
});
afterAll(async () => {
  await r.cleanup();
});
beforeEach(() => {
  keyId = randomUUID();
  accountId = randomUUID();
});

const current = { d: DAY, w: 'w2026-W47', m: 'm2026-11' };
const loadBoth = async (spent: string, credits: string, postpaid = false, usage = '0') => {
  await store.beginRebuild({ keyId, accountId }, NOW);
  await store.loadKey(accountId, keyId, NOW, current, [
    [DAY, usd(spent)],
    ['all', usd(spent)],
  ]);
  await store.loadAccount(accountId, NOW, {
    usageUnits: usd(usage),
    creditsUnits: usd(credits),
    postpaid,
    version: 1,
  });
};
const admit = (
  worst: string,
  limit: string | null,
  requestId = `gen-1-${randomUUID().slice(0, 20)}`,
  now = NOW,
) =>
  store.admit({
    keyId,
    accountId,
    requestId,
    worstCaseUnits: usd(worst),
    limitUnits: limit === null ? null : usd(limit),
    period: DAY,
    now,
  });
const field = (hash: string, f: string) => r.client.hget(hash, f);
const keyHash = () => spendKeyHash(r.prefix, accountId, keyId);
const acctHash = () => spendAccountHash(r.prefix, accountId);

describe('spend store (Lua scripts on a real Redis)', () => {
  it('asks for a rebuild when the hashes are missing, never reading them as zero', async () => {
    expect(await admit('1', '10')).toEqual({
      code: 'rebuild',
      key: true,
      account: true,
      team: false,
      expiredPending: 0,
    });
    await store.loadAccount(accountId, NOW, {
      usageUnits: 0n,
      creditsUnits: usd('5'),
      postpaid: false,
      version: 1,
    });
    expect(await admit('1', '10')).toEqual({
      code: 'rebuild',
      key: true,
      account: false,
      team: false,
      expiredPending: 0,
    });
    // A key without a limit needs only the account hash.
    expect((await admit('1', null)).code).toBe('admitted');
  });

  it('admits while spent + held + worst case stays within the limit, then refuses', async () => {
    await loadBoth('9', '100');
    expect((await admit('0.5', '10')).code).toBe('admitted');
    expect((await admit('0.5', '10')).code).toBe('admitted'); // 9 + 0.5 + 0.5 = 10
    expect((await admit('0.0000000001', '10')).code).toBe('key_limit');
    expect(await field(keyHash(), '_held')).toBe(String(usd('1')));
  });

  it('turns a reservation into a pending cost on settle and clears it when the worker commits', async () => {
    await loadBoth('0', '100');
    const req = 'gen-1-aaaaaaaaaaaaaaaaaaaa';
    await admit('2', '10', req);
    await store.settle({
      keyId,
      accountId,
      requestId: req,
      costUnits: usd('0.25'),
      keyTracked: true,
      accountTracked: true,
      now: NOW,
    });
    expect(await field(keyHash(), '_held')).toBe(String(usd('0.25')));
    expect(await field(acctHash(), '_held')).toBe(String(usd('0.25')));
    await store.applyCommitted(
      NOW,
      [{ keyId, accountId, totals: [[DAY, usd('0.25')]], requestIds: [req] }],
      [{ accountId, usageUnits: usd('0.25'), requestIds: [req] }],
    );
    expect(await field(keyHash(), '_held')).toBe('0');
    expect(await field(keyHash(), DAY)).toBe(String(usd('0.25')));
    expect(await field(acctHash(), 'usage')).toBe(String(usd('0.25')));
    expect(await field(keyHash(), `p:${req}`)).toBeNull();
  });

  it('drops a pending cost billing never counted after its 7-day TTL and reports it (expiredPending)', async () => {
    await loadBoth('0', '100');
    const req = 'gen-1-pppppppppppppppppppp';
    await admit('2', '10', req);
    await store.settle({
      keyId,
      accountId,
      requestId: req,
      costUnits: usd('0.25'),
      keyTracked: true,
      accountTracked: true,
      now: NOW,
    });
    expect(await admit('0', '10', undefined, NOW + 60_000)).toMatchObject({
      code: 'admitted',
      expiredPending: 0,
    });
    const week = NOW + 7 * 86_400_000 + 1;
    // One hold on the key's hash, one on the account's; the lapsed reservation is not counted.
    expect(await admit('0', '10', undefined, week)).toMatchObject({ code: 'admitted', expiredPending: 2 });
    expect(await field(keyHash(), `p:${req}`)).toBeNull();
    expect(await field(acctHash(), `p:${req}`)).toBeNull();
    expect(await field(keyHash(), '_held')).toBe('0');
    expect(await admit('0', '10', undefined, week + 1)).toMatchObject({ expiredPending: 0 });
  });

  it('leaves a tombstone when the worker counts a request before the proxy settles it', async () => {
    await loadBoth('0', '100');
    const req = 'gen-1-bbbbbbbbbbbbbbbbbbbb';
    await admit('2', '10', req);
    await store.applyCommitted(NOW, [{ keyId, accountId, totals: [[DAY, usd('1')]], requestIds: [req] }], []);
    expect(await field(keyHash(), '_held')).toBe('0');
    await store.settle({
      keyId,
      accountId,
      requestId: req,
      costUnits: usd('1'),
      keyTracked: true,
      accountTracked: false,
      now: NOW,
    });
    expect(await field(keyHash(), '_held')).toBe('0');
    expect(await field(keyHash(), `t:${req}`)).toBeNull();
  });

  it('raises counters monotonically: an older total never lowers a newer one', async () => {
    await loadBoth('0', '100');
    await store.applyCommitted(NOW, [{ keyId, accountId, totals: [[DAY, usd('5')]], requestIds: [] }], []);
    await store.applyCommitted(NOW, [{ keyId, accountId, totals: [[DAY, usd('3')]], requestIds: [] }], []);
    expect(await field(keyHash(), DAY)).toBe(String(usd('5')));
    await store.loadKey(accountId, keyId, NOW, current, [[DAY, usd('4')]]);
    expect(await field(keyHash(), DAY)).toBe(String(usd('5')));
  });

  it('does not create a hash the worker finds missing (it is rebuilt from Postgres instead)', async () => {
    await store.applyCommitted(NOW, [{ keyId, accountId, totals: [[DAY, usd('5')]], requestIds: [] }], []);
    expect(await r.client.exists(keyHash())).toBe(0);
  });

  it('releases reservations whose request never settled once they expire, after a rebuild from Postgres', async () => {
    await loadBoth('0', '100');
    await admit('6', '10');
    expect((await admit('6', '10')).code).toBe('key_limit');
    // The sweep drops the lapsed hold and unbuilds the hash: billing may have counted that request in
    // Postgres without reaching Redis, so the decision waits for a rebuild.
    expect(await admit('6', '10', undefined, NOW + 16 * 60_000)).toMatchObject({
      code: 'rebuild',
      key: true,
    });
    expect(await field(keyHash(), '_ok')).toBeNull();
    await loadBoth('0', '100');
    expect((await admit('6', '10', undefined, NOW + 16 * 60_000)).code).toBe('admitted');
  });

  it('rebuilds before deciding when a lapsed hold was swept: a commit Redis never saw is counted (Redis outage)', async () => {
    // Request A (worst 6 of the 10) is admitted; then Redis is unreachable: its proxy's settle fails,
    // billing commits its cost (5) to Postgres but cannot update Redis. Redis comes back after the lease.
    await loadBoth('0', '100');
    expect((await admit('6', '10', 'gen-1-outageoutageoutageou')).code).toBe('admitted');
    const after = NOW + 10_001; // the lease (10 s) lapsed during the outage
    // Without the rebuild the key would read 0 spent and admit 6 more: 5 + 6 > 10 once both are billed.
    const first = await admit('6', '10', undefined, after);
    expect(first).toMatchObject({ code: 'rebuild', key: true, account: true });
    expect(await field(keyHash(), 'r:gen-1-outageoutageoutageou')).toBeNull();
    // The rebuild loads Postgres, which has A's commit.
    await store.beginRebuild({ keyId, accountId }, after);
    await store.loadKey(accountId, keyId, after, current, [
      [DAY, usd('5')],
      ['all', usd('5')],
    ]);
    await store.loadAccount(accountId, after, {
      usageUnits: usd('5'),
      creditsUnits: usd('100'),
      postpaid: false,
      version: 1,
    });
    expect((await admit('6', '10', undefined, after)).code).toBe('key_limit');
    expect((await admit('5', '10', undefined, after)).code).toBe('admitted');
  });

  it('rebuilds the account before deciding when a lapsed hold was swept from it (prepaid credits)', async () => {
    await loadBoth('0', '10');
    expect((await admit('6', null, 'gen-1-acctlapseacctlapseac')).code).toBe('admitted');
    const after = NOW + 10_001;
    expect(await admit('6', null, undefined, after)).toMatchObject({
      code: 'rebuild',
      key: false,
      account: true,
    });
    expect(await field(acctHash(), '_ok')).toBeNull();
    await store.loadAccount(accountId, after, {
      usageUnits: usd('5'),
      creditsUnits: usd('10'),
      postpaid: false,
      version: 1,
    });
    expect((await admit('6', null, undefined, after)).code).toBe('credits');
    expect((await admit('5', null, undefined, after)).code).toBe('admitted');
  });

  it("refuses with credits when usage plus holds plus the request's worst case exceed the credits, unless postpaid", async () => {
    await loadBoth('0', '1', false, '0.5');
    expect((await admit('0.6', null)).code).toBe('credits'); // 0.5 + 0 + 0.6 > 1
    expect((await admit('0.3', null)).code).toBe('admitted'); // 0.5 + 0 + 0.3 <= 1
    expect((await admit('0.2', null)).code).toBe('admitted'); // 0.5 + 0.3 + 0.2 = 1: fits exactly
    expect((await admit('0', null)).code).toBe('credits'); // 0.5 + 0.5 = 1: nothing left
    expect((await admit('0.0000000001', null)).code).toBe('credits'); // one unit over
    await store.updateAccountSettings(accountId, { creditsUnits: usd('1'), postpaid: true, version: 2 });
    const postpaid = await admit('0.4', null);
    expect(postpaid).toMatchObject({ code: 'admitted', keyTracked: false, accountTracked: false });
  });

  it('compares exactly in integer units far above 2^53 units (no doubles)', async () => {
    // 500 million USD = 5e18 units: doubles cannot tell 5e18 - 1 from 5e18.
    const limit = '500000000';
    const spent = '499999999.9999999999'; // limit minus one unit
    await loadBoth(spent, '1000000000');
    expect((await admit('0.0000000001', limit)).code).toBe('admitted'); // exactly at the limit
    expect((await admit('0.0000000001', limit)).code).toBe('key_limit'); // one unit over
    expect(await field(keyHash(), '_held')).toBe('1');
    // The account side too: credits 900 million USD, usage one unit below.
    accountId = randomUUID();
    await store.loadAccount(accountId, NOW, {
      usageUnits: usd('899999999.9999999999'),
      creditsUnits: usd('900000000'),
      postpaid: false,
      version: 1,
    });
    expect((await admit('0.0000000001', null)).code).toBe('admitted');
    expect((await admit('0.0000000001', null)).code).toBe('credits');
  });

  it('keeps limits, credits and held sums exact beyond int64 (9.2e18 units ≈ 922 million USD)', async () => {
    // 1.2e21 units: past int64, where HINCRBY would fail; room left exactly 1.0000000001 USD.
    const limit = '123456789012.3456789012';
    await loadBoth('123456789011.3456789011', '99999999999999999999');
    expect((await admit('1.0000000002', limit)).code).toBe('key_limit'); // one unit over
    expect((await admit('1', limit)).code).toBe('admitted');
    expect((await admit('0.0000000002', limit)).code).toBe('key_limit');
    expect((await admit('0.0000000001', limit)).code).toBe('admitted'); // = limit exactly
    expect((await admit('0.0000000001', limit)).code).toBe('key_limit');
    expect(await field(keyHash(), '_held')).toBe(String(usd('1.0000000001')));
    // Holds larger than int64 on the account, added and released exactly.
    const huge = '1000000000000'; // 1e22 units
    const reqs = ['gen-1-hhhhhhhhhhhhhhhhhhhh', 'gen-1-iiiiiiiiiiiiiiiiiiii'];
    for (const q of reqs) expect((await admit(huge, null, q)).code).toBe('admitted');
    const acctHeld = await field(acctHash(), '_held');
    expect(acctHeld).toBe(String(2n * usd(huge) + usd('1.0000000001')));
    for (const q of reqs)
      await store.settle({
        keyId,
        accountId,
        requestId: q,
        costUnits: 3n,
        keyTracked: false,
        accountTracked: true,
        now: NOW,
      });
    expect(await field(acctHash(), '_held')).toBe(String(6n + usd('1.0000000001')));
    await store.applyCommitted(NOW, [], [{ accountId, usageUnits: 6n, requestIds: reqs }]);
    expect(await field(acctHash(), '_held')).toBe(String(usd('1.0000000001')));
  });

  // On a cluster too: the admits go out 500 at a time (sequential ones, one round trip each through
  // the cluster client, outlasted the timeout), then one renewal of all 7,000 leases.
  it('renews the leases of a process with thousands of requests in flight (chunked, no call-stack overflow)', async () => {
    await loadBoth('0', '1000000');
    // Admitted with the production sweep interval: the suite's store sweeps on every admit
    // (gcIntervalMs 0), which reads the whole hash each time — quadratic over 7,000 holds.
    const bulk = createSpendStore(r.client, { prefix: r.prefix });
    const leases = Array.from({ length: 7_000 }, () => ({
      keyId,
      accountId,
      requestId: `gen-1-${randomUUID().slice(0, 20)}`,
      keyTracked: true,
      accountTracked: true,
      units: usd('0.001'),
    }));
    for (let i = 0; i < leases.length; i += 500) {
      const chunk = leases.slice(i, i + 500);
      const admitted = await Promise.all(
        chunk.map((l) =>
          bulk.admit({
            keyId,
            accountId,
            requestId: l.requestId,
            worstCaseUnits: usd('0.001'),
            limitUnits: usd('100000'),
            period: DAY,
            now: NOW,
          }),
        ),
      );
      expect(admitted.filter((a) => a.code !== 'admitted')).toEqual([]);
    }
    // 14,000 owner entries: one script call with them all overflowed the call stack of the proxy's
    // auto-pipelining client (the proxy crashed under 6,500 open streams).
    const client = createRedisClient({ url: r.url }, { enableAutoPipelining: true });
    const proxySide = createSpendStore(client, { prefix: r.prefix, timings: { gcIntervalMs: 0 } });
    const result = await proxySide.renew(NOW + 1_000, leases).finally(() => client.disconnect());
    expect(result).toEqual({ renewed: 14_000, overLimit: [], overTeam: new Set() });
    const expires = String(NOW + 1_000 + 10_000);
    expect(await field(keyHash(), `r:${leases[6_999]?.requestId}`)).toBe(`${usd('0.001')}|${expires}`);
  }, 60_000);

  it('keeps a renewed lease past its TTL and releases an abandoned one after it (crashed proxy)', async () => {
    const leased = createSpendStore(r.client, {
      prefix: r.prefix,
      timings: { gcIntervalMs: 0, reservationTtlMs: 1_000 },
    });
    await loadBoth('0', '100');
    const live = `gen-1-${randomUUID().slice(0, 20)}`;
    const crashed = `gen-1-${randomUUID().slice(0, 20)}`;
    const at = (requestId: string, now: number, worst = '4') =>
      leased.admit({
        keyId,
        accountId,
        requestId,
        worstCaseUnits: usd(worst),
        limitUnits: usd('10'),
        period: DAY,
        now,
      });
    expect((await at(live, NOW)).code).toBe('admitted');
    expect((await at(crashed, NOW)).code).toBe('admitted');
    expect((await at(`gen-1-${randomUUID().slice(0, 20)}`, NOW + 10)).code).toBe('key_limit'); // 4 + 4 + 4 > 10
    // Only the live request's process renews (every 300 ms of its life, here once at +800 ms).
    const lease = {
      keyId,
      accountId,
      requestId: live,
      keyTracked: true,
      accountTracked: true,
      units: usd('4'),
    };
    expect((await leased.renew(NOW + 800, [lease])).renewed).toBe(2); // key hash and account hash
    // At +1.5 s the crashed request's lease has lapsed and is swept (the hash is then rebuilt from
    // Postgres before the decision); the live one still holds.
    expect((await at(`gen-1-${randomUUID().slice(0, 20)}`, NOW + 1_500)).code).toBe('rebuild');
    await loadBoth('0', '100');
    expect((await at(`gen-1-${randomUUID().slice(0, 20)}`, NOW + 1_500)).code).toBe('admitted');
    expect(await field(keyHash(), `r:${crashed}`)).toBeNull();
    expect(await field(keyHash(), `r:${live}`)).not.toBeNull();
    expect(await field(keyHash(), '_held')).toBe(String(usd('8')));
  });

  it('holds a lapsed lease again on renewal unless the request was settled or counted', async () => {
    const leased = createSpendStore(r.client, {
      prefix: r.prefix,
      timings: { gcIntervalMs: 0, reservationTtlMs: 1_000 },
    });
    await loadBoth('0', '100');
    const lapsed = `gen-1-${randomUUID().slice(0, 20)}`;
    const settled = `gen-1-${randomUUID().slice(0, 20)}`;
    for (const id of [lapsed, settled]) {
      await leased.admit({
        keyId,
        accountId,
        requestId: id,
        worstCaseUnits: usd('1'),
        limitUnits: usd('10'),
        period: DAY,
        now: NOW,
      });
    }
    await leased.settle({
      keyId,
      accountId,
      requestId: settled,
      costUnits: usd('0.5'),
      keyTracked: true,
      accountTracked: true,
      now: NOW,
    });
    // A sweep at +2 s drops the lapsed lease (the process stalled past its TTL)...
    await leased.admit({
      keyId,
      accountId,
      requestId: `gen-1-${randomUUID().slice(0, 20)}`,
      worstCaseUnits: 0n,
      limitUnits: usd('10'),
      period: DAY,
      now: NOW + 2_000,
    });
    expect(await field(keyHash(), `r:${lapsed}`)).toBeNull();
    // ...and its late renewal holds it again; the settled one is not resurrected.
    const lease = (requestId: string) => ({
      keyId,
      accountId,
      requestId,
      keyTracked: true,
      accountTracked: false,
      units: usd('1'),
    });
    expect((await leased.renew(NOW + 2_100, [lease(lapsed), lease(settled)])).renewed).toBe(0);
    expect(await field(keyHash(), `r:${lapsed}`)).not.toBeNull();
    expect(await field(keyHash(), `r:${settled}`)).toBeNull();
    expect(await field(keyHash(), '_held')).toBe(String(usd('1.5'))); // lapsed 1 + settled pending 0.5
  });

  it('reports a lapsed lease that no longer fits once held again, so its request is stopped', async () => {
    const leased = createSpendStore(r.client, {
      prefix: r.prefix,
      timings: { gcIntervalMs: 0, reservationTtlMs: 1_000 },
    });
    await loadBoth('0', '100');
    const at = (requestId: string, now: number, worst: string) =>
      leased.admit({
        keyId,
        accountId,
        requestId,
        worstCaseUnits: usd(worst),
        limitUnits: usd('10'),
        period: DAY,
        now,
      });
    const stalled = `gen-1-${randomUUID().slice(0, 20)}`;
    const fits = `gen-1-${randomUUID().slice(0, 20)}`;
    expect((await at(stalled, NOW, '6')).code).toBe('admitted');
    expect((await at(fits, NOW, '1')).code).toBe('admitted');
    // Both processes stall past the lease; meanwhile another request takes the room (sweep at +1.5 s,
    // then a rebuild from Postgres, which has nothing of the two: their events are not sent yet).
    expect((await at(`gen-1-${randomUUID().slice(0, 20)}`, NOW + 1_500, '6')).code).toBe('rebuild');
    await loadBoth('0', '100');
    expect((await at(`gen-1-${randomUUID().slice(0, 20)}`, NOW + 1_500, '6')).code).toBe('admitted');
    const lease = (requestId: string, units: string) => ({
      keyId,
      accountId,
      requestId,
      keyTracked: true,
      accountTracked: true,
      units: usd(units),
      limitUnits: usd('10'),
      period: DAY,
    });
    const result = await leased.renew(NOW + 1_600, [lease(fits, '1'), lease(stalled, '6')]);
    // 6 (newcomer) + 1 fits within 10; then 6 + 1 + 6 = 13 > 10: the stalled one must stop. Its hold
    // stays (conservative: nothing new is admitted on top of it).
    expect(result.renewed).toBe(0);
    expect(result.overLimit.map((l) => l.requestId)).toEqual([stalled]);
    expect(await field(keyHash(), '_held')).toBe(String(usd('13')));
    expect((await at(`gen-1-${randomUUID().slice(0, 20)}`, NOW + 1_700, '0.0000000001')).code).toBe(
      'key_limit',
    );
  });

  it('applies account settings in version order only', async () => {
    await loadBoth('0', '1');
    await store.updateAccountSettings(accountId, { creditsUnits: usd('30'), postpaid: false, version: 3 });
    await store.updateAccountSettings(accountId, { creditsUnits: usd('20'), postpaid: false, version: 2 });
    expect(await field(acctHash(), 'credits')).toBe(String(usd('30')));
  });

  it('prunes periods older than the current ones on rebuild', async () => {
    await loadBoth('1', '10');
    await store.loadKey(accountId, keyId, NOW + 86_400_000, { ...current, d: 'd2026-11-21' }, [
      ['d2026-11-21', usd('2')],
    ]);
    expect(await field(keyHash(), DAY)).toBeNull();
    expect(await field(keyHash(), 'all')).toBe(String(usd('1')));
    expect(await field(keyHash(), 'd2026-11-21')).toBe(String(usd('2')));
  });
});
