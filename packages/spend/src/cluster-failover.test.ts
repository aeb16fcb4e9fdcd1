import { randomUUID } from 'node:crypto';
import { createRedisClient, isCluster, keySlot, type RedisClient, whenReady } from '@tollgate/redis';
import { type LocalRedisCluster, startLocalRedisCluster } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendAccountHash, spendKeyHash } from './keys';
import { createSpendStore, type SpendStore } from './store';

// Issue 31: the spend scripts on a real Redis Cluster (3 masters + 3 replicas of this file's own, so
// the failover disturbs no other suite), one master failed over (CLUSTER FAILOVER on its replica)
// while requests are admitted and settled; no key may end over its limit and no hold may be lost.
// Runs in the `redis-cluster` vitest project (vitest.config.ts), which CI runs with `pnpm test`.
const onCluster = process.env.TOLLGATE_TEST_REDIS === 'cluster';

/** The hash `key` as the node at `hostPort` holds it (a replica too), its holds left out: for failure reports. */
async function nodeHash(hostPort: string, key: string): Promise<string> {
  const node = createRedisClient(
    { url: `redis://${hostPort}` },
    { lazyConnect: true, maxRetriesPerRequest: 1 },
  );
  try {
    await node.connect();
    const role = String(((await node.call('ROLE')) as unknown[])[0]);
    await node.call('READONLY');
    const h = await node.hgetall(key).catch((err: Error) => ({ error: err.message }));
    const fields = Object.entries(h).filter(([f]) => !/^[rpt]:/.test(f));
    const holds = Object.keys(h).filter((f) => /^[rpt]:/.test(f)).length;
    return `${role} ${JSON.stringify(Object.fromEntries(fields))} +${holds} holds`;
  } catch (err) {
    return `unreadable (${(err as Error).message})`;
  } finally {
    node.disconnect();
  }
}

const USD = 10_000_000_000n;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 'd2026-11-20';
const current = { d: DAY, w: 'w2026-W47', m: 'm2026-11' };

describe.skipIf(!onCluster)('spend store on a Redis Cluster with a master failed over under load', () => {
  let cluster: LocalRedisCluster;
  let redis: RedisClient;
  let store: SpendStore;
  const prefix = 'tgt:failover:';

  beforeAll(async () => {
    cluster = await startLocalRedisCluster();
    redis = createRedisClient({ url: cluster.url }, { enableAutoPipelining: true, maxRetriesPerRequest: 5 });
    store = createSpendStore(redis, { prefix });
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('keeps every key within its limit and every admitted hold, across the failover', async () => {
    expect(isCluster(redis)).toBe(true);
    // 24 accounts with one limited key each ($40 a day), prepaid with $60 each: the key's limit binds.
    // 36 keys: the first 24 take the load before and during the failover, the last 12 only after it.
    const owners = Array.from({ length: 36 }, () => ({ keyId: randomUUID(), accountId: randomUUID() }));
    const limit = 40n * USD;
    const credits = 60n * USD;
    for (const o of owners) {
      await store.beginRebuild({ accountId: o.accountId, keyId: o.keyId }, NOW);
      await store.loadKey(o.accountId, o.keyId, NOW, current, [[DAY, 0n]]);
      await store.loadAccount(o.accountId, NOW, {
        usageUnits: 0n,
        creditsUnits: credits,
        postpaid: false,
        version: 1,
      });
    }
    // The accounts are spread over every master (the hash tag decides the slot).
    const slots = new Set(
      owners.map((o) => Math.floor(keySlot(spendAccountHash(prefix, o.accountId)) / 5462)),
    );
    expect(slots.size).toBe(3);

    const admitted = new Map<string, bigint>(owners.map((o) => [o.keyId, 0n]));
    const full0 = () => owners.filter((o) => (admitted.get(o.keyId) ?? 0n) > limit - USD).length;
    let errors = 0;
    const errorMessages = new Set<string>();
    let afterFailover = 0;
    let failedOver = false;
    const start = Date.now();
    let doneAt = Number.POSITIVE_INFINITY;
    const worker = async (w: number) => {
      // Until 1.5 s after the failover and a key at its limit (a starved host admits slowly), 40 s at most.
      const more = () => Date.now() < doneAt + 1_500 || full0() === 0;
      for (let n = 0; Date.now() < start + 40_000 && more(); n++) {
        const late = failedOver ? 12 : 0;
        const o = owners[late ? 24 + ((w * 7 + n) % late) : (w * 7 + n) % 24] as (typeof owners)[0];
        const worst = BigInt(1 + ((w + n) % 3)) * (USD / 4n); // $0.25–0.75
        const requestId = `gen-${w}-${n}-${randomUUID()}`;
        try {
          const r = await store.admit({
            keyId: o.keyId,
            accountId: o.accountId,
            requestId,
            worstCaseUnits: worst,
            limitUnits: limit,
            period: DAY,
            now: NOW + n,
          });
          if (r.code !== 'admitted') continue;
          admitted.set(o.keyId, (admitted.get(o.keyId) ?? 0n) + worst);
          if (late) afterFailover++;
          // Settled at its worst case (the most it may cost): the pending cost stays on both hashes.
          await store.settle({
            keyId: o.keyId,
            accountId: o.accountId,
            requestId,
            costUnits: worst,
            keyTracked: r.keyTracked,
            accountTracked: r.accountTracked,
            now: NOW + n,
          });
        } catch (err) {
          errors++; // refused for want of Redis: nothing was admitted
          errorMessages.add(String((err as Error).message).slice(0, 120));
        }
      }
    };
    const failover = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      const [master] = await cluster.masters();
      const promoted = await cluster.failover(master as number);
      failedOver = true;
      doneAt = Date.now();
      expect(await cluster.masters()).toContain(promoted);
    })();
    await Promise.all([...Array.from({ length: 12 }, (_, w) => worker(w)), failover]);

    expect(failedOver).toBe(true);
    expect(afterFailover).toBeGreaterThan(0);
    console.log(
      `failover test: admitted ${[...admitted.values()].reduce((a, b) => a + b, 0n) / (USD / 4n)} quarter-dollars, ${afterFailover} requests after the failover, ${errors} errors, ${full0()} keys at their limit, failover took ${doneAt - start - 300} ms`,
    );
    if (errorMessages.size > 0) console.log(`failover test errors: ${[...errorMessages].join(' | ')}`);
    // A hold not counted: what every node (the masters and their replicas) has in the key's hash.
    let mismatched = false;
    for (const o of owners) {
      const hash = spendKeyHash(prefix, o.accountId, o.keyId);
      if (BigInt((await redis.hget(hash, '_held')) ?? '0') === (admitted.get(o.keyId) ?? 0n)) continue;
      const slot = keySlot(hash);
      const copies = await Promise.all(cluster.nodes.map(async (n) => `${n}: ${await nodeHash(n, hash)}`));
      console.log(
        `failover test: key ${o.keyId} admitted ${admitted.get(o.keyId)}; slot ${slot} on :${await cluster.ownerOf(slot)}; ${copies.join('; ')}`,
      );
      mismatched = true;
    }
    if (mismatched) {
      console.log(`failover test: failovers: ${cluster.failovers.join(' || ')}`);
      const [failedFrom, promotedTo] = (
        /master :(\d+).*replica :(\d+)/.exec(cluster.failovers[0] ?? '') ?? []
      )
        .slice(1)
        .map(Number);
      for (const port of [failedFrom, promotedTo])
        if (port) console.log(`failover test: log of :${port}:\n${cluster.logTail(port, 60)}`);
    }
    for (const o of owners) {
      const spent = admitted.get(o.keyId) ?? 0n;
      expect(spent).toBeLessThanOrEqual(limit);
      // Every admitted request's cost is still held on both hashes (none lost in the failover).
      const [keyHeld, acctHeld] = await Promise.all([
        redis.hget(spendKeyHash(prefix, o.accountId, o.keyId), '_held'),
        redis.hget(spendAccountHash(prefix, o.accountId), '_held'),
      ]);
      expect(BigInt(keyHeld ?? '0')).toBe(spent);
      expect(BigInt(acctHeld ?? '0')).toBe(spent);
    }
    // The load was real: keys were driven to their limit, before and after the failover.
    const full = owners.filter((o) => (admitted.get(o.keyId) ?? 0n) > limit - USD).length;
    expect(full).toBeGreaterThan(0);
    // A planned failover refuses nothing: every command follows its redirection (no auto-pipelining
    // on a cluster, @tollgate/redis createRedisClient).
    expect(errors).toBe(0);
  }, 60_000);

  it('admits across a slot moved under a client that asked for auto-pipelining (the proxy): no MOVED reaches the caller', async () => {
    // The proxy's options (services/proxy/src/http/resources.ts connectRedis). ioredis' cluster
    // auto-pipelining batched the two admissions below into one pipeline to the slot's old master and
    // handed the moved account's MOVED reply to the caller (redis/ioredis#2075): a 503 in the proxy.
    const proxyRedis = createRedisClient(
      { url: cluster.url },
      {
        enableAutoPipelining: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        commandTimeout: 1_000,
        clusterCommandTimeout: 3_000,
      },
    );
    try {
      expect(await whenReady(proxyRedis, 10_000)).toBe(true);
      const proxyStore = createSpendStore(proxyRedis, { prefix });
      const masters = await cluster.masters();
      const admit = (o: { keyId: string; accountId: string }, n: number) =>
        proxyStore.admit({
          ...o,
          requestId: `gen-moved-${n}-${randomUUID()}`,
          worstCaseUnits: USD / 4n,
          limitUnits: 40n * USD,
          period: DAY,
          now: NOW + n,
        });
      // Three times (a slot-map refresh of the client between the move and the admissions would hide
      // the stale map once): two accounts on one master in different slots, the first one's slot
      // moved (still empty) to another master after the client read the slot map.
      for (let round = 0; round < 3; round++) {
        const owner = async () => {
          const o = { keyId: randomUUID(), accountId: randomUUID() };
          const slot = keySlot(spendAccountHash(prefix, o.accountId));
          return { o, slot, port: await cluster.ownerOf(slot) };
        };
        let moved = await owner();
        let stays = await owner();
        while (stays.port !== moved.port || stays.slot === moved.slot) stays = await owner();
        const to = masters.find((p) => p !== moved.port) as number;
        // (A slot holding another test's keys is not moved: pick another account there.)
        while (!(await cluster.moveSlot(moved.slot, to))) {
          moved = await owner();
          while (moved.port !== stays.port || moved.slot === stays.slot) moved = await owner();
        }
        // Both owners' hashes loaded through the test's own client (which follows the move).
        for (const { o } of [moved, stays]) {
          await store.beginRebuild({ accountId: o.accountId, keyId: o.keyId }, NOW);
          await store.loadKey(o.accountId, o.keyId, NOW, current, [[DAY, 0n]]);
          await store.loadAccount(o.accountId, NOW, {
            usageUnits: 0n,
            creditsUnits: 60n * USD,
            postpaid: false,
            version: 1,
          });
        }
        // In the same tick: one batch to the old master if the client auto-pipelined.
        const results = await Promise.allSettled([admit(moved.o, round), admit(stays.o, round)]);
        expect(results.map((r) => (r.status === 'fulfilled' ? r.value.code : String(r.reason)))).toEqual([
          'admitted',
          'admitted',
        ]);
        expect(await cluster.ownerOf(moved.slot)).toBe(to);
      }
    } finally {
      proxyRedis.disconnect();
    }
  }, 60_000);
});
