import { randomUUID } from 'node:crypto';
import type { AppError } from '@tollgate/errors';
import { toUnits } from '@tollgate/money';
import { createRedisClient } from '@tollgate/redis';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendKeyHash } from './keys';
import { createLeaseRenewer, type LiveLease } from './lease-renewer';
import { createSpendStore } from './store';
import type { SpendStore } from './store-types';

/** The lease renewer on a real store and Redis: what it renews, what it stops, and how it coalesces. */
let r: TestRedis;
const NOW = Date.UTC(2026, 10, 20, 12);
const DAY = 'd2026-11-20';
const current = { d: DAY, w: 'w2026-W47', m: 'm2026-11' };
const usd = (s: string) => toUnits(s);
const rid = () => `gen-1-${randomUUID().slice(0, 20)}`;

beforeAll(async () => {
  r = await createTestRedis();
});
afterAll(async () => {
  await r.cleanup();
});

async function owners() {
  const prefix = `${r.prefix}lease-${randomUUID().slice(0, 8)}:`;
  const store = createSpendStore(r.client, { prefix, timings: { gcIntervalMs: 0, reservationTtlMs: 1_000 } });
  const keyId = randomUUID();
  const accountId = randomUUID();
  const load = async () => {
    await store.beginRebuild({ keyId, accountId }, NOW);
    await store.loadKey(keyId, NOW, current, [[DAY, 0n]]);
    await store.loadAccount(accountId, NOW, {
      usageUnits: 0n,
      creditsUnits: usd('100'),
      postpaid: false,
      version: 1,
    });
  };
  await load();
  const admit = (requestId: string, now: number, worst: string) =>
    store.admit({
      keyId,
      accountId,
      requestId,
      worstCaseUnits: usd(worst),
      limitUnits: usd('10'),
      period: DAY,
      now,
    });
  const lease = (requestId: string, worst: string, lost: AppError[] = []): LiveLease => {
    const reservation = {
      keyId,
      accountId,
      requestId,
      keyTracked: true,
      accountTracked: true,
      onLost: (e: AppError) => lost.push(e),
    };
    return {
      ...reservation,
      units: usd(worst),
      limitUnits: usd('10'),
      period: DAY,
      reservation,
      limitReset: 'daily',
    };
  };
  return { store, load, admit, lease, keyHash: spendKeyHash(prefix, keyId) };
}

/** A store whose renewals are counted and answered only when released (the rest is the real store). */
function gated(store: SpendStore) {
  const calls: number[] = [];
  let open: () => void = () => {};
  let gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    calls,
    release() {
      open();
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
    store: {
      async renew(now: number, leases: Iterable<LiveLease>) {
        calls.push(now);
        await gate;
        return store.renew(now, leases);
      },
    },
  };
}

describe('lease renewer', () => {
  it('renews tracked leases past their TTL and stops renewing a released one', async () => {
    const o = await owners();
    let clock = NOW;
    const renewer = createLeaseRenewer({
      store: o.store,
      clock: () => new Date(clock),
      leaseRenewMs: 60_000,
    });
    const [kept, released] = [rid(), rid()];
    for (const id of [kept, released]) expect((await o.admit(id, NOW, '1')).code).toBe('admitted');
    renewer.track(o.lease(kept, '1'));
    renewer.track(o.lease(released, '1'));
    renewer.release(released);
    expect(renewer.size).toBe(1);
    clock = NOW + 800;
    await renewer.renew();
    expect(await r.client.hget(o.keyHash, `r:${kept}`)).toBe(`${usd('1')}|${NOW + 1_800}`);
    expect(await r.client.hget(o.keyHash, `r:${released}`)).toBe(`${usd('1')}|${NOW + 1_000}`);
  });

  it('stops a lapsed lease that no longer fits once held again: onLost with the key limit refusal', async () => {
    const o = await owners();
    const renewer = createLeaseRenewer({
      store: o.store,
      clock: () => new Date(NOW + 1_600),
      leaseRenewMs: 60_000,
    });
    const stalled = rid();
    const lost: AppError[] = [];
    expect((await o.admit(stalled, NOW, '6')).code).toBe('admitted');
    // The lease lapses and is swept; another request takes the room after a rebuild.
    expect((await o.admit(rid(), NOW + 1_500, '6')).code).toBe('rebuild');
    await o.load();
    expect((await o.admit(rid(), NOW + 1_500, '6')).code).toBe('admitted');
    renewer.track(o.lease(stalled, '6', lost));
    await renewer.renew();
    expect(lost.map((e) => e.type)).toEqual(['key_limit_exceeded']);
    expect(renewer.size).toBe(0);
  });

  it('shares renewals before a rebuild: one in flight and one queued for everyone who came meanwhile', async () => {
    const o = await owners();
    const g = gated(o.store);
    const renewer = createLeaseRenewer({ store: g.store, clock: () => new Date(NOW), leaseRenewMs: 60_000 });
    const id = rid();
    expect((await o.admit(id, NOW, '1')).code).toBe('admitted');
    renewer.track(o.lease(id, '1'));
    const first = renewer.renewBeforeRebuild();
    const waiters = [
      renewer.renewBeforeRebuild(),
      renewer.renewBeforeRebuild(),
      renewer.renewBeforeRebuild(),
    ];
    expect(g.calls).toHaveLength(1);
    g.release();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.calls).toHaveLength(2); // the queued one started after the first ended
    g.release();
    await Promise.all(waiters);
    expect(g.calls).toHaveLength(2);
  });

  it('asks nothing of Redis with no live lease, and hands renewal failures to onBackgroundError', async () => {
    const o = await owners();
    const g = gated(o.store);
    const errors: unknown[] = [];
    const renewer = createLeaseRenewer({ store: g.store, clock: () => new Date(NOW), leaseRenewMs: 60_000 });
    await renewer.renew();
    expect(g.calls).toHaveLength(0);
    const broken = createSpendStore(
      createRedisClient(
        { url: r.url },
        { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false },
      ),
      {
        prefix: r.prefix,
      },
    );
    const failing = createLeaseRenewer({
      store: broken,
      clock: () => new Date(NOW),
      leaseRenewMs: 60_000,
      onBackgroundError: (err) => errors.push(err),
    });
    failing.track(o.lease(rid(), '1'));
    await failing.renew();
    expect(errors).toHaveLength(1);
  });
});
