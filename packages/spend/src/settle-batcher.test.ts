import { randomUUID } from 'node:crypto';
import { toUnits } from '@tollgate/money';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendKeyHash } from './keys';
import { createSettleBatcher } from './settle-batcher';
import { createSpendStore } from './store';
import type { SettleArgs, SpendStore } from './store-types';

/** The settle batcher on a real store and Redis. */
let r: TestRedis;
const NOW = Date.UTC(2026, 10, 20, 12);
const DAY = 'd2026-11-20';
const usd = (s: string) => toUnits(s);

beforeAll(async () => {
  r = await createTestRedis();
});
afterAll(async () => {
  await r.cleanup();
});

async function setup() {
  const prefix = `${r.prefix}batch-${randomUUID().slice(0, 8)}:`;
  const store = createSpendStore(r.client, { prefix, timings: { gcIntervalMs: 0 } });
  const keyId = randomUUID();
  const accountId = randomUUID();
  await store.beginRebuild({ keyId, accountId }, NOW);
  await store.loadKey(accountId, keyId, NOW, { d: DAY, w: 'w2026-W47', m: 'm2026-11' }, [[DAY, 0n]]);
  await store.loadAccount(accountId, NOW, { usageUnits: 0n, creditsUnits: 0n, postpaid: true, version: 1 });
  const batches: number[] = [];
  const counted: Pick<SpendStore, 'settleMany'> = {
    settleMany(list) {
      batches.push(list.length);
      return store.settleMany(list);
    },
  };
  const admitted = async (requestId: string): Promise<SettleArgs> => {
    const a = await store.admit({
      keyId,
      accountId,
      requestId,
      worstCaseUnits: usd('1'),
      limitUnits: usd('100'),
      period: DAY,
      now: NOW,
    });
    expect(a.code).toBe('admitted');
    return {
      keyId,
      accountId,
      requestId,
      costUnits: usd('0.5'),
      keyTracked: true,
      accountTracked: false,
      now: NOW,
    };
  };
  return { store: counted, batches, admitted, keyHash: spendKeyHash(prefix, accountId, keyId) };
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `gen-1-batch${String(i).padStart(15, '0')}`);

describe('settle batcher', () => {
  it('sends the settles of one linger in one call and resolves each once it reached Redis', async () => {
    const s = await setup();
    const batcher = createSettleBatcher({ store: s.store, lingerMs: 20 });
    const args = await Promise.all(ids(10).map(s.admitted));
    await Promise.all(args.map((a) => batcher.settle(a)));
    expect(s.batches).toEqual([10]);
    for (const a of args) expect(await r.client.hget(s.keyHash, `p:${a.requestId}`)).toMatch(/^5000000000\|/);
  });

  it('sends a full batch at once without waiting for the linger', async () => {
    const s = await setup();
    const batcher = createSettleBatcher({ store: s.store, lingerMs: 60_000, batch: 4 });
    const args = await Promise.all(ids(5).map(s.admitted));
    const settled = args.slice(0, 4).map((a) => batcher.settle(a));
    await Promise.all(settled);
    expect(s.batches).toEqual([4]);
    const last = batcher.settle(args[4] as SettleArgs);
    await batcher.flush();
    await last;
    expect(s.batches).toEqual([4, 1]);
  });

  it('with no linger, sends the settles of one event-loop turn together', async () => {
    const s = await setup();
    const batcher = createSettleBatcher({ store: s.store, lingerMs: 0 });
    const args = await Promise.all(ids(3).map(s.admitted));
    await Promise.all(args.map((a) => batcher.settle(a)));
    expect(s.batches).toEqual([3]);
  });

  it('rejects only the settle whose hash is not a hash; the others of its batch settle', async () => {
    const s = await setup();
    const batcher = createSettleBatcher({ store: s.store, lingerMs: 5 });
    const [good] = await Promise.all(ids(1).map(s.admitted));
    const bad = { ...(good as SettleArgs), keyId: randomUUID(), requestId: 'gen-1-badbadbadbadbadbadba' };
    await r.client.set(
      spendKeyHash(s.keyHash.slice(0, s.keyHash.indexOf('spend:')), bad.accountId, bad.keyId),
      'x',
    );
    const results = await Promise.allSettled([batcher.settle(good as SettleArgs), batcher.settle(bad)]);
    expect(results.map((x) => x.status)).toEqual(['fulfilled', 'rejected']);
    expect(s.batches).toEqual([2]);
  });

  it('ride sends the waiting settles at once, and nothing when none wait', async () => {
    const s = await setup();
    const batcher = createSettleBatcher({ store: s.store, lingerMs: 60_000 });
    batcher.ride();
    expect(s.batches).toEqual([]);
    const args = await Promise.all(ids(2).map(s.admitted));
    const settled = args.map((a) => batcher.settle(a));
    batcher.ride();
    expect(s.batches).toEqual([2]);
    await Promise.all(settled);
    for (const a of args) expect(await r.client.hget(s.keyHash, `p:${a.requestId}`)).toMatch(/^5000000000\|/);
  });

  it('flush with nothing waiting sends nothing', async () => {
    const s = await setup();
    await createSettleBatcher({ store: s.store, lingerMs: 5 }).flush();
    expect(s.batches).toEqual([]);
  });
});
