import { randomUUID } from 'node:crypto';
import { createLogger } from '@tollgate/logger';
import { createSpendStore, spendKeyHash } from '@tollgate/spend';
import {
  createTcpProxy,
  createTestRedis,
  hostPortOf,
  type TcpProxy,
  type TestRedis,
} from '@tollgate/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { classifyBillingFailure } from './failure';
import { createSpendSync } from './spend-sync';

/** The Redis update after a commit, on a real Redis reached through a TCP fault proxy. */
let r: TestRedis;
let proxy: TcpProxy;
let viaProxy: Redis;
const NOW = Date.UTC(2026, 10, 20, 12);
const log = createLogger({ name: 't', level: (process.env.SYNC_LOG as 'silent') ?? 'silent' });

beforeAll(async () => {
  r = await createTestRedis();
  proxy = await createTcpProxy(hostPortOf(r.url, 6379));
  viaProxy = new Redis(proxy.url(r.url), { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  viaProxy.on('error', () => {});
});
afterAll(async () => {
  viaProxy.disconnect();
  await proxy.close();
  await r.cleanup();
});

async function builtKey() {
  const keyId = randomUUID();
  const store = createSpendStore(r.client, { prefix: r.prefix });
  await store.beginRebuild({ keyId }, NOW);
  await store.loadKey(keyId, NOW, { d: 'd1', w: 'w1', m: 'm1' }, []);
  const committed = (total: bigint, ids: string[]) => [
    { keyId, totals: [['all', total]] as Array<[string, bigint]>, requestIds: ids },
  ];
  return { keyId, hash: spendKeyHash(r.prefix, keyId), committed };
}

const sync = (o: { backlogMax?: number; attempts?: number } = {}) =>
  createSpendSync({
    spend: createSpendStore(viaProxy, { prefix: r.prefix }),
    clock: () => new Date(NOW),
    log,
    attempts: o.attempts ?? 1,
    retryMs: 50,
    backlogMax: o.backlogMax,
  });

describe('spend sync after commit', () => {
  it('raises the counters at once when Redis answers', async () => {
    const k = await builtKey();
    const s = sync();
    await s.afterCommit(k.committed(7n, ['gen-1']), []);
    expect(await r.client.hget(k.hash, 'all')).toBe('7');
    expect(s.backlog()).toBe(0);
    await s.close();
  });

  it('keeps the update while Redis is away and applies it when Redis returns', async () => {
    const k = await builtKey();
    const s = sync();
    await proxy.stop();
    try {
      await s.afterCommit(k.committed(5n, ['gen-1', 'gen-2']), []);
      await s.afterCommit(k.committed(9n, ['gen-2', 'gen-3']), []);
      expect(s.backlog()).toBe(3);
    } finally {
      await proxy.start();
    }
    // The backlog reads 0 while a retry is in flight (taken, not yet applied): wait for Redis itself.
    await vi.waitFor(async () => expect(await r.client.hget(k.hash, 'all')).toBe('9'), { timeout: 10_000 });
    expect(s.backlog()).toBe(0);
    await s.close();
  });

  it('past its bound throws a transient error (the batch is not acked) and keeps nothing', async () => {
    const k = await builtKey();
    const s = sync({ backlogMax: 1 });
    await proxy.stop();
    try {
      const err = await s.afterCommit(k.committed(5n, ['gen-1', 'gen-2']), []).catch((e: unknown) => e);
      expect(classifyBillingFailure(err)).toBe('transient');
      expect(s.backlog()).toBe(0);
    } finally {
      await proxy.start();
    }
    await s.close();
  });

  it('logs and drops an update Redis refuses for good (a hash that is not a hash): nothing kept, nothing thrown', async () => {
    const keyId = randomUUID();
    await r.client.set(spendKeyHash(r.prefix, keyId), 'not a hash');
    const s = sync({ attempts: 2 });
    await s.afterCommit([{ keyId, totals: [['all', 1n]], requestIds: ['gen-1'] }], []);
    expect(s.backlog()).toBe(0);
    await s.close();
  });

  it('close tries the backlog once more', async () => {
    const k = await builtKey();
    const s = createSpendSync({
      spend: createSpendStore(viaProxy, { prefix: r.prefix }),
      clock: () => new Date(NOW),
      log,
      attempts: 1,
      retryMs: 60_000,
    });
    await proxy.stop();
    try {
      await s.afterCommit(k.committed(3n, ['gen-1']), []);
    } finally {
      await proxy.start();
    }
    expect(s.backlog()).toBe(1);
    await vi.waitFor(async () => expect(await viaProxy.ping()).toBe('PONG'), { timeout: 10_000 });
    await s.close();
    expect(await r.client.hget(k.hash, 'all')).toBe('3');
  });
});
