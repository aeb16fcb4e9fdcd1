import { randomUUID } from 'node:crypto';
import { toUnits } from '@tollgate/money';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSpendStore, type SpendStore, spendKeyHash, spendTokenRateKey } from './store';

/** Issue 29: the tokens-per-minute charge folded into the admission script (real Redis). */
let r: TestRedis;
let store: SpendStore;
let keyId: string;
let accountId: string;
const NOW = Date.UTC(2026, 10, 20, 12, 0, 10);
const DAY = 'd2026-11-20';

beforeAll(async () => {
  r = await createTestRedis();
  store = createSpendStore(r.client, { prefix: r.prefix, timings: { gcIntervalMs: 0 } });
});
afterAll(async () => {
  await r.cleanup();
});
beforeEach(async () => {
  keyId = randomUUID();
  accountId = randomUUID();
  await store.beginRebuild({ keyId, accountId }, NOW);
  await store.loadKey(accountId, keyId, NOW, { d: DAY, w: 'w2026-W47', m: 'm2026-11' }, [[DAY, 0n]]);
  await store.loadAccount(accountId, NOW, {
    usageUnits: 0n,
    creditsUnits: toUnits('100'),
    postpaid: false,
    version: 1,
  });
});

const counter = (now = NOW) => spendTokenRateKey(r.prefix, accountId, keyId, now);
const admit = (
  tokens: number,
  opts: { limitUsd?: string; worstUsd?: string; now?: number; limit?: number } = {},
) =>
  store.admit({
    keyId,
    accountId,
    requestId: `gen-${randomUUID()}`,
    worstCaseUnits: toUnits(opts.worstUsd ?? '0.01'),
    limitUnits: opts.limitUsd === undefined ? null : toUnits(opts.limitUsd),
    period: DAY,
    now: opts.now ?? NOW,
    tokenRate: { counterKey: counter(opts.now), limit: opts.limit ?? 1000, tokens, counterTtlMs: 120_000 },
  });

describe('admit with a tokens-per-minute limit', () => {
  it('charges admitted worst-case tokens and refuses the request that would pass the limit, charging nothing', async () => {
    expect((await admit(400)).code).toBe('admitted');
    expect((await admit(600)).code).toBe('admitted');
    expect(await r.client.get(counter())).toBe('1000');
    expect((await admit(1)).code).toBe('token_rate_limited');
    expect(await r.client.get(counter())).toBe('1000');
    const ttl = await r.client.pttl(counter());
    expect(ttl).toBeGreaterThan(100_000);
    expect(ttl).toBeLessThanOrEqual(120_000);
  });

  it('refuses without holding spend, and charges no tokens for a request the spend limit refuses', async () => {
    expect((await admit(900, { limitUsd: '0.015' })).code).toBe('admitted');
    const before = await r.client.hget(spendKeyHash(r.prefix, accountId, keyId), '_held');
    expect((await admit(200)).code).toBe('token_rate_limited');
    expect(await r.client.hget(spendKeyHash(r.prefix, accountId, keyId), '_held')).toBe(before);
    // Key limit 0.015 USD: 0.01 held, a second 0.01 does not fit → key_limit, tokens untouched.
    expect((await admit(50, { limitUsd: '0.015' })).code).toBe('key_limit');
    expect(await r.client.get(counter())).toBe('900');
  });

  it('starts a new window each minute', async () => {
    const late = NOW + 49_000; // 12:00:59, then 12:01:01 (leases of 10 s still live)
    expect((await admit(1000, { now: late })).code).toBe('admitted');
    expect((await admit(1, { now: late })).code).toBe('token_rate_limited');
    expect((await admit(1000, { now: late + 2_000 })).code).toBe('admitted');
    expect(await r.client.get(counter(late + 2_000))).toBe('1000');
  });

  it('holds under concurrency: the admitted tokens never pass the limit', async () => {
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => admit(70)));
    const admitted = outcomes.filter((o) => o.code === 'admitted').length;
    expect(admitted).toBe(14); // floor(1000 / 70)
    expect(Number(await r.client.get(counter()))).toBe(admitted * 70);
  });

  // The checked admission reads the key record (the digest's slot): single node only (on a cluster the
  // proxy reads the record first, services/proxy/src/http/app.ts).
  it.skipIf(process.env.TOLLGATE_TEST_REDIS === 'cluster')(
    'works with the checked admission of a recalled record: the request is counted in its rate window either way',
    async () => {
      const recordKey = `${r.prefix}key:test-${keyId}`;
      const rpmKey = `${r.prefix}rate:test-${keyId}`;
      await r.client.hset(recordKey, 'v', '3', 's', 'ok');
      const checked = (tokens: number) =>
        store.admit({
          keyId,
          accountId,
          requestId: `gen-${randomUUID()}`,
          worstCaseUnits: toUnits('0.01'),
          limitUnits: null,
          period: DAY,
          now: NOW,
          check: { recordKey, version: 3, counterKey: rpmKey, counterTtlMs: 60_000, rateLimit: null },
          tokenRate: { counterKey: counter(), limit: 1000, tokens, counterTtlMs: 120_000 },
        });
      expect(await checked(800)).toMatchObject({ code: 'admitted', count: 1 });
      expect(await checked(300)).toMatchObject({ code: 'token_rate_limited', count: 2 });
      expect(await r.client.get(counter())).toBe('800');
      // A stale record: nothing counted, nothing charged.
      await r.client.hset(recordKey, 'v', '4');
      expect((await checked(100)).code).toBe('stale');
      expect(await r.client.get(counter())).toBe('800');
    },
  );
});
