import { randomUUID } from 'node:crypto';
import { createServiceSigner, generateServiceKeyPair } from '@tollgate/auth';
import type { CachedKey } from '@tollgate/key-cache';
import { toUnits } from '@tollgate/money';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedisSpendGuard } from './guard';
import { reference } from './reference-scripts.fixture';
import { createSpendStore, type SettleArgs, type SpendStore, spendAccountHash, spendKeyHash } from './store';

/**
 * The batched settle (one script call for many requests) and the one-call commit must leave every
 * hash exactly as the per-request scripts they replace did (reference-scripts.fixture.ts), and the
 * guard's batching must keep settle exactly-once with holds that lapse by lease when a batch is lost.
 */
let r: TestRedis;
const NOW = Date.UTC(2026, 10, 23, 12);
const DAY = 'd2026-11-23';
const current = { d: DAY, w: 'w2026-W48', m: 'm2026-11' };
const usd = (s: string) => toUnits(s);

beforeAll(async () => {
  r = await createTestRedis();
});
afterAll(async () => {
  await r.cleanup();
});

/** Deterministic pseudo-random numbers (mulberry32), so a failing sequence can be replayed. */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function load(store: SpendStore, keyId: string, accountId: string, spent: string, credits: string) {
  await store.beginRebuild({ keyId, accountId }, NOW);
  await store.loadKey(accountId, keyId, NOW, current, [
    [DAY, usd(spent)],
    ['all', usd(spent)],
  ]);
  await store.loadAccount(accountId, NOW, {
    usageUnits: usd('1'),
    creditsUnits: usd(credits),
    postpaid: false,
    version: 1,
  });
}

describe('batched settle and one-call commit match the per-request scripts', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`random sequence ${seed}: every hash field equal after every step`, async () => {
      const rand = rng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
      // Two copies of the same owners: A runs the reference scripts, B the store's.
      const sides = ['a', 'b'].map((side) => {
        const prefix = `${r.prefix}${side}${seed}:`;
        return { prefix, store: createSpendStore(r.client, { prefix, timings: { gcIntervalMs: 0 } }) };
      });
      const [A, B] = sides as [(typeof sides)[0], (typeof sides)[0]];
      const keys = ['k1', 'k2'];
      const accounts = ['a1', 'a2'];
      for (const s of sides) {
        await load(s.store, 'k1', 'a1', '3', '50');
        await load(s.store, 'k2', 'a2', '0', '1000000000000');
      }
      const hashes = (prefix: string) => [
        ...keys.map((k, i) => spendKeyHash(prefix, accounts[i] as string, k)),
        ...accounts.map((a) => spendAccountHash(prefix, a)),
      ];
      const owner = [
        { keyId: 'k1', accountId: 'a1' },
        { keyId: 'k2', accountId: 'a2' },
      ];
      const amounts = ['0', '0.0000000001', '0.25', '1.5', '7', '123456.789', '999999999.9999999999', '5e0'];
      const amount = () => {
        const a = pick(amounts);
        return a === '5e0' ? 5n : usd(a);
      };
      const admitted: Array<{ id: string; o: number; keyTracked: boolean; accountTracked: boolean }> = [];
      const ids: string[] = [];
      let now = NOW;
      const refSettle = (prefix: string, s: SettleArgs) =>
        r.client.eval(
          reference.settle,
          2,
          spendKeyHash(prefix, s.accountId, s.keyId),
          spendAccountHash(prefix, s.accountId),
          s.now,
          s.requestId,
          (s.costUnits < 0n ? 0n : s.costUnits).toString(),
          7 * 86_400_000,
          s.keyTracked ? 1 : 0,
          s.accountTracked ? 1 : 0,
          35 * 86_400,
        );
      const refCommit = (hash: string, totals: string[], reqs: string[]) =>
        r.client.eval(
          reference.commit,
          1,
          hash,
          now,
          15 * 60_000,
          35 * 86_400,
          totals.length / 2,
          ...totals,
          ...reqs,
        );
      const compare = async (step: string) => {
        const ha = hashes(A.prefix);
        const hb = hashes(B.prefix);
        for (let i = 0; i < ha.length; i++) {
          const [va, vb] = await Promise.all([
            r.client.hgetall(ha[i] as string),
            r.client.hgetall(hb[i] as string),
          ]);
          expect(vb, `${step}: ${hb[i]}`).toEqual(va);
          const [ta, tb] = await Promise.all([r.client.ttl(ha[i] as string), r.client.ttl(hb[i] as string)]);
          expect(tb > 0, `${step}: ttl of ${hb[i]}`).toBe(ta > 0);
        }
      };

      for (let step = 0; step < 120; step++) {
        now += Math.floor(rand() * 50);
        const op = rand();
        if (op < 0.4) {
          // Admit a new request on both sides (the admit script is the same on both).
          const o = Math.floor(rand() * 2);
          const id = `gen-1-${randomUUID().slice(0, 20)}`;
          const worst = amount();
          const limited = rand() < 0.7;
          for (const s of sides) {
            await s.store.admit({
              ...(owner[o] as (typeof owner)[0]),
              requestId: id,
              worstCaseUnits: worst,
              limitUnits: limited ? usd('1000000000000') : null,
              period: DAY,
              now,
            });
          }
          admitted.push({ id, o, keyTracked: limited, accountTracked: true });
          ids.push(id);
        } else if (op < 0.75) {
          // Settle a batch: admitted requests, repeats, never-admitted ids, zero costs, untracked sides.
          const list: SettleArgs[] = [];
          const n = 1 + Math.floor(rand() * 8);
          for (let i = 0; i < n; i++) {
            const a =
              rand() < 0.85 && admitted.length > 0
                ? pick(admitted)
                : { id: `gen-1-${randomUUID().slice(0, 20)}`, o: 0, keyTracked: true, accountTracked: true };
            list.push({
              ...(owner[a.o] as (typeof owner)[0]),
              requestId: a.id,
              costUnits: rand() < 0.2 ? 0n : amount(),
              keyTracked: a.keyTracked && rand() < 0.95,
              accountTracked: a.accountTracked && rand() < 0.95,
              now,
            });
          }
          for (const s of list) if (s.keyTracked || s.accountTracked) await refSettle(A.prefix, s);
          expect((await B.store.settleMany(list)).size).toBe(0);
        } else if (op < 0.95) {
          // The billing worker commits some requests (settled, unsettled, repeated, unknown).
          const o = Math.floor(rand() * 2);
          const reqs = Array.from({ length: Math.floor(rand() * 6) }, () =>
            rand() < 0.8 && ids.length > 0 ? pick(ids) : `gen-1-${randomUUID().slice(0, 20)}`,
          );
          const total = String(usd(String(step)));
          const keyTotals: Array<[string, bigint]> = [
            [DAY, BigInt(total)],
            ['all', BigInt(total) + 7n],
            [DAY, BigInt(total) - 1n],
          ];
          await refCommit(
            spendKeyHash(A.prefix, owner[o]?.accountId as string, owner[o]?.keyId as string),
            keyTotals.flatMap(([p, u]) => [p, u.toString()]),
            reqs,
          );
          await refCommit(spendAccountHash(A.prefix, owner[o]?.accountId as string), ['usage', total], reqs);
          await B.store.applyCommitted(
            now,
            [
              {
                keyId: owner[o]?.keyId as string,
                accountId: owner[o]?.accountId as string,
                totals: keyTotals,
                requestIds: reqs,
              },
            ],
            [{ accountId: owner[o]?.accountId as string, usageUnits: BigInt(total), requestIds: reqs }],
          );
        } else {
          // A hash vanishes (flush, eviction): settles re-create it without _ok, commits skip it.
          const i = Math.floor(rand() * 4);
          await r.client.del(hashes(A.prefix)[i] as string);
          await r.client.del(hashes(B.prefix)[i] as string);
        }
        await compare(`seed ${seed} step ${step}`);
      }
    });
  }

  it('settles hundreds of requests of many keys in chunks, each exactly once', async () => {
    const prefix = `${r.prefix}many:`;
    const store = createSpendStore(r.client, { prefix });
    const owners = Array.from({ length: 20 }, (_, i) => ({ keyId: `k${i}`, accountId: `a${i % 3}` }));
    for (const o of owners) await load(store, o.keyId, o.accountId, '0', '100000');
    const list: SettleArgs[] = [];
    for (let i = 0; i < 600; i++) {
      const o = owners[i % owners.length] as (typeof owners)[0];
      const requestId = `gen-1-${String(i).padStart(20, '0')}`;
      await store.admit({
        ...o,
        requestId,
        worstCaseUnits: usd('1'),
        limitUnits: usd('100000'),
        period: DAY,
        now: NOW,
      });
      list.push({ ...o, requestId, costUnits: usd('0.5'), keyTracked: true, accountTracked: true, now: NOW });
    }
    const spy = vi.spyOn(r.client, 'evalsha');
    expect((await store.settleMany(list)).size).toBe(0);
    // 1,200 members (request × hash), 256 per call; on a cluster per account (3 × 400 members: 2 each).
    expect(spy.mock.calls.length).toBe(r.cluster ? 6 : 5);
    spy.mockRestore();
    for (const o of owners) {
      expect(await r.client.hget(spendKeyHash(prefix, o.accountId, o.keyId), '_held')).toBe(
        String(usd('15')),
      );
    }
    for (const a of ['a0', 'a1', 'a2']) {
      const n = list.filter((s) => s.accountId === a).length;
      expect(await r.client.hget(spendAccountHash(prefix, a), '_held')).toBe(String(usd('0.5') * BigInt(n)));
    }
  });

  it('settles the members of readable hashes when another member’s hash is not a hash', async () => {
    const prefix = `${r.prefix}wrongtype:`;
    const store = createSpendStore(r.client, { prefix });
    await load(store, 'k1', 'a1', '0', '100');
    await load(store, 'k2', 'a2', '0', '100');
    const admit = (keyId: string, accountId: string, requestId: string) =>
      store.admit({
        keyId,
        accountId,
        requestId,
        worstCaseUnits: usd('2'),
        limitUnits: usd('10'),
        period: DAY,
        now: NOW,
      });
    await admit('k1', 'a1', 'gen-1-xxxxxxxxxxxxxxxxxxx1');
    await admit('k2', 'a2', 'gen-1-xxxxxxxxxxxxxxxxxxx2');
    // The account hash of the first request is replaced by a string (an operator's mistake).
    await r.client.set(spendAccountHash(prefix, 'a1'), 'oops');
    const failed = await store.settleMany(
      ['1', '2'].map((n) => ({
        keyId: `k${n}`,
        accountId: `a${n}`,
        requestId: `gen-1-xxxxxxxxxxxxxxxxxxx${n}`,
        costUnits: usd('1'),
        keyTracked: true,
        accountTracked: true,
        now: NOW,
      })),
    );
    expect([...failed]).toEqual(['gen-1-xxxxxxxxxxxxxxxxxxx1']);
    // Its key hash and the other request were settled once; the broken hash was left alone.
    expect(await r.client.hget(spendKeyHash(prefix, 'a1', 'k1'), 'p:gen-1-xxxxxxxxxxxxxxxxxxx1')).toMatch(
      /^10000000000\|/,
    );
    expect(await r.client.hget(spendKeyHash(prefix, 'a1', 'k1'), '_held')).toBe(String(usd('1')));
    expect(await r.client.hget(spendAccountHash(prefix, 'a2'), '_held')).toBe(String(usd('1')));
    expect(await r.client.get(spendAccountHash(prefix, 'a1'))).toBe('oops');
  });
});

describe('the guard batches settles', () => {
  const signer = createServiceSigner('proxy', generateServiceKeyPair().privateKey);
  const key = (id: string, accountId: string): CachedKey => ({
    id,
    accountId,
    scope: 'inference',
    disabled: false,
    revoked: false,
    limit: '10',
    limitReset: 'daily',
    version: 1,
  });

  const setup = async (name: string, timings: Record<string, number> = {}) => {
    const prefix = `${r.prefix}guard-${name}:`;
    let clock = NOW;
    const store = createSpendStore(r.client, { prefix, timings: { gcIntervalMs: 0, ...timings } });
    const guard = createRedisSpendGuard({
      redis: r.client,
      prefix,
      billingUrl: 'http://127.0.0.1:1',
      signer,
      clock: () => new Date(clock),
      timings: { gcIntervalMs: 0, ...timings },
    });
    const keyId = randomUUID();
    const accountId = randomUUID();
    await load(store, keyId, accountId, '0', '100');
    return {
      prefix,
      store,
      guard,
      k: key(keyId, accountId),
      keyHash: spendKeyHash(prefix, accountId, keyId),
      acctHash: spendAccountHash(prefix, accountId),
      advance: (ms: number) => {
        clock += ms;
      },
    };
  };

  it('sends the settles of one linger in one script call, each settled exactly once', async () => {
    const g = await setup('one-call', { settleLingerMs: 20 });
    const reservations = [];
    for (let i = 0; i < 30; i++) {
      reservations.push(
        await g.guard.admit({
          key: g.k,
          worstCaseCostUnits: usd('0.3'),
          requestId: `gen-1-${randomUUID().slice(0, 20)}`,
        }),
      );
    }
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('9')));
    const spy = vi.spyOn(r.client, 'evalsha');
    const settled = reservations.map((res) => g.guard.settle(res, usd('0.1')));
    await new Promise((res) => setTimeout(res, 5));
    expect(spy).not.toHaveBeenCalled(); // still lingering
    await Promise.all(settled);
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('3')));
    expect(await r.client.hget(g.acctHash, '_held')).toBe(String(usd('3')));
    for (const res of reservations) {
      expect(await r.client.hget(g.keyHash, `r:${res?.requestId}`)).toBeNull();
      expect(await r.client.hget(g.keyHash, `p:${res?.requestId}`)).toMatch(/^1000000000\|/);
    }
  });

  it('an admission takes the waiting settles with it, ahead of itself (no linger, their holds released)', async () => {
    // The linger never fires in this test: only the next admission can send the settle.
    const g = await setup('ride', { settleLingerMs: 3_600_000 });
    const first = await g.guard.admit({
      key: g.k,
      worstCaseCostUnits: usd('6'),
      requestId: 'gen-1-rideriderideridefirst',
    });
    let settled = false;
    const settle = g.guard.settle(first, usd('1')).then(() => {
      settled = true;
    });
    await new Promise((res) => setTimeout(res, 20));
    expect(settled).toBe(false);
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('6')));
    // 6 held + 6 would pass the key's limit of 10; with the settle run first, 1 pending + 6 fits.
    const spy = vi.spyOn(r.client, 'evalsha');
    const second = await g.guard.admit({
      key: g.k,
      worstCaseCostUnits: usd('6'),
      requestId: 'gen-1-riderideridesecondxx',
    });
    expect(second).not.toBeNull();
    // The settle's script call went first, in the same turn as the admission's.
    expect(spy.mock.calls.map((c) => c[0])).toHaveLength(2);
    spy.mockRestore();
    await settle;
    expect(settled).toBe(true);
    expect(await r.client.hget(g.keyHash, `p:${first?.requestId}`)).toMatch(/^10000000000\|/);
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('7')));
    // Nothing waiting: an admission sends only itself.
    const only = vi.spyOn(r.client, 'evalsha');
    await expect(
      g.guard.admit({ key: g.k, worstCaseCostUnits: usd('6'), requestId: 'gen-1-riderideridethirdxxx' }),
    ).rejects.toMatchObject({ type: 'key_limit_exceeded' });
    expect(only).toHaveBeenCalledTimes(1);
    only.mockRestore();
  });

  it('a batch lost with its process (never sent) leaves holds that lapse by lease', async () => {
    // A guard whose settles wait an hour: the process "crashes" before its batch is sent.
    const g = await setup('crash', { settleLingerMs: 3_600_000, reservationTtlMs: 10_000 });
    const lost = await g.guard.admit({
      key: g.k,
      worstCaseCostUnits: usd('6'),
      requestId: 'gen-1-lostlostlostlostlost',
    });
    void g.guard.settle(lost, usd('1')).catch(() => {});
    // Left the live set: no renewal keeps it. Until the lease lapses, the worst case still counts.
    const other = createRedisSpendGuard({
      redis: r.client,
      prefix: g.prefix,
      billingUrl: 'http://127.0.0.1:1',
      signer,
      clock: () => new Date(NOW + 10_001),
      timings: { gcIntervalMs: 0 },
    });
    await expect(
      createRedisSpendGuard({
        redis: r.client,
        prefix: g.prefix,
        billingUrl: 'http://127.0.0.1:1',
        signer,
        clock: () => new Date(NOW + 5_000),
        timings: { gcIntervalMs: 0 },
      }).admit({ key: g.k, worstCaseCostUnits: usd('6'), requestId: 'gen-1-tooearlytooearlyto' }),
    ).rejects.toMatchObject({ type: 'key_limit_exceeded' });
    // After the lease, the next admission's sweep releases it and unbuilds the hashes: the lost
    // request's event may be counted in Postgres already, so the decision waits for a rebuild
    // (billing is unreachable in this test: 503, never an admission on the short counters).
    await expect(
      other.admit({ key: g.k, worstCaseCostUnits: usd('6'), requestId: 'gen-1-afterafterafteraft' }),
    ).rejects.toMatchObject({ type: 'service_unavailable' });
    expect(await r.client.hget(g.keyHash, 'r:gen-1-lostlostlostlostlost')).toBeNull();
    expect(await r.client.hget(g.keyHash, '_ok')).toBeNull();
    // Billing's rebuild loads Postgres, where the lost request's event was counted (1).
    await g.store.beginRebuild({ keyId: g.k.id, accountId: g.k.accountId }, NOW + 10_001);
    await g.store.loadKey(g.k.accountId, g.k.id, NOW + 10_001, current, [[DAY, usd('1')]]);
    await g.store.loadAccount(g.k.accountId, NOW + 10_001, {
      usageUnits: usd('1'),
      creditsUnits: usd('100'),
      postpaid: false,
      version: 1,
    });
    const next = await other.admit({
      key: g.k,
      worstCaseCostUnits: usd('6'),
      requestId: 'gen-1-afterafterafteraft',
    });
    expect(next).not.toBeNull();
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('6')));
    await expect(
      other.admit({
        key: g.k,
        worstCaseCostUnits: usd('3.0000000001'),
        requestId: 'gen-1-overoveroveroverove',
      }),
    ).rejects.toMatchObject({ type: 'key_limit_exceeded' }); // 1 + 6 + 3.0000000001 > 10
    await other.settle(next, 0n);
  });

  it('billing commits before the batch is sent: the late settle adds nothing (tombstone)', async () => {
    const g = await setup('commit-first', { settleLingerMs: 30 });
    const res = await g.guard.admit({
      key: g.k,
      worstCaseCostUnits: usd('2'),
      requestId: 'gen-1-commitfirstcommitf',
    });
    const settled = g.guard.settle(res, usd('0.5'));
    // The worker counted the request meanwhile (its event was published with the settle).
    await g.store.applyCommitted(
      NOW,
      [
        {
          keyId: g.k.id,
          accountId: g.k.accountId,
          totals: [[DAY, usd('0.5')]],
          requestIds: ['gen-1-commitfirstcommitf'],
        },
      ],
      [{ accountId: g.k.accountId, usageUnits: usd('1.5'), requestIds: ['gen-1-commitfirstcommitf'] }],
    );
    expect(await r.client.hget(g.keyHash, 't:gen-1-commitfirstcommitf')).not.toBeNull();
    await settled;
    for (const h of [g.keyHash, g.acctHash]) {
      expect(await r.client.hget(h, '_held')).toBe('0');
      expect(await r.client.hget(h, 'p:gen-1-commitfirstcommitf')).toBeNull();
      expect(await r.client.hget(h, 'r:gen-1-commitfirstcommitf')).toBeNull();
      expect(await r.client.hget(h, 't:gen-1-commitfirstcommitf')).toBeNull();
    }
    expect(await r.client.hget(g.keyHash, DAY)).toBe(String(usd('0.5')));
  });

  it('billing commits after the batch: the pending cost is cleared with the counter raised', async () => {
    const g = await setup('commit-after', { settleLingerMs: 1 });
    const ids = ['gen-1-commitafter000000001', 'gen-1-commitafter000000002'];
    const res = await Promise.all(
      ids.map((requestId) => g.guard.admit({ key: g.k, worstCaseCostUnits: usd('2'), requestId })),
    );
    await Promise.all(res.map((x) => g.guard.settle(x, usd('0.5'))));
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('1')));
    await g.store.applyCommitted(
      NOW,
      [{ keyId: g.k.id, accountId: g.k.accountId, totals: [[DAY, usd('1')]], requestIds: ids }],
      [{ accountId: g.k.accountId, usageUnits: usd('2'), requestIds: ids }],
    );
    for (const h of [g.keyHash, g.acctHash]) {
      expect(await r.client.hget(h, '_held')).toBe('0');
      for (const id of ids) expect(await r.client.hexists(h, `p:${id}`)).toBe(0);
    }
    expect(await r.client.hget(g.keyHash, DAY)).toBe(String(usd('1')));
  });

  it('flush sends waiting settles at once (shutdown)', async () => {
    const g = await setup('flush', { settleLingerMs: 3_600_000 });
    const res = await g.guard.admit({
      key: g.k,
      worstCaseCostUnits: usd('2'),
      requestId: 'gen-1-flushflushflushflus',
    });
    const settled = g.guard.settle(res, usd('0.5'));
    await g.guard.flush?.();
    await settled;
    expect(await r.client.hget(g.keyHash, '_held')).toBe(String(usd('0.5')));
  });
});
