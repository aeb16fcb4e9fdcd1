/**
 * Issue 23/31: each service's own Redis ACL user (infra/credentials/policy.mjs), made by the project's
 * provisioning with names unique to this run and dropped afterwards, on the run's Redis: a single
 * node in the default vitest project, the run's local 3-master Redis Cluster in the `redis-cluster`
 * project (vitest.config.ts), where every node gets the users and each user's client is an ioredis
 * `Cluster` (it needs CLUSTER SLOTS and CLUSTER INFO, granted by REDIS_CLUSTER_COMMANDS).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { digestKey } from '@tollgate/auth';
import {
  createKeyCache,
  lastUsedHashKey,
  lastUsedHashKeys,
  legacyLastUsedHashKey,
} from '@tollgate/key-cache';
import { toUnits } from '@tollgate/money';
import { createSpendStore } from '@tollgate/spend';
import { createTestRedis, runId, type TestRedis } from '@tollgate/testkit';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_CLUSTER_COMMANDS, redisAclRules } from '../infra/credentials/policy.mjs';
import { dropRedisUsers, type Login, provisionRedis, withLogin } from '../infra/credentials/provision';

const tag = `${runId()}_${randomBytes(3).toString('hex')}`.replace(/[^a-z0-9_]/gi, '_').toLowerCase();
const login = (service: string): Login => ({
  user: `tgt_${tag}_${service}`,
  password: randomBytes(18).toString('base64url'),
});

describe('Redis: an ACL user per service, limited to its keys', () => {
  let redis: TestRedis;
  const users = { proxy: login('proxy'), keys: login('keys'), billing: login('billing') };
  const clients: (Redis | Cluster)[] = [];
  /** A client logged in as `l`: a Cluster on the cluster (slot map, ready check), else a node client. */
  const as = (l: Login) => {
    const url = new URL(withLogin(redis.url, { user: l.user, password: l.password }));
    const c = redis.cluster
      ? new Cluster([{ host: url.hostname, port: Number(url.port) }], {
          redisOptions: { username: l.user, password: l.password, maxRetriesPerRequest: 1 },
          clusterRetryStrategy: () => null,
        })
      : new Redis(url.toString(), { maxRetriesPerRequest: 1 });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    redis = await createTestRedis();
    await provisionRedis(redis.url, redis.prefix, users);
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await dropRedisUsers(
      redis.url,
      Object.values(users).map((u) => u.user),
    );
    await redis.cleanup();
  });

  it("refuses the proxy's user writing a key-cache record (minting a key), and lets it read one", async () => {
    const digest = digestKey(randomUUID());
    const record = {
      id: randomUUID(),
      accountId: randomUUID(),
      scope: 'inference' as const,
      disabled: false,
      revoked: false,
      limit: null,
      limitReset: null,
      version: 1,
    };
    const proxyCache = createKeyCache(as(users.proxy), { prefix: redis.prefix });
    // (The fill script may be called; its write inside is refused.)
    await expect(proxyCache.fill(digest, record)).rejects.toThrow(/can't access|NOPERM/);
    await expect(as(users.proxy).hset(`${redis.prefix}key:{${digest}}`, 'v', '9')).rejects.toThrow(/NOPERM/);
    // The keys service's user writes it; the proxy's reads it through the same package code.
    expect(await createKeyCache(as(users.keys), { prefix: redis.prefix }).fill(digest, record)).toBe(true);
    expect(await proxyCache.get(digest)).toEqual({ state: 'hit', key: record });
    // The read and the rate-window count in one script call (one slot: the digest's hash tag): the
    // script names the record, which the proxy's selector allows; a script writing it is refused.
    const read = await proxyCache.getCounting(digest, Date.now());
    expect(read.lookup).toEqual({ state: 'hit', key: record });
    expect(read.count).not.toBeNull();
    const mint = "return redis.call('HSET', KEYS[1], 'v', '9')";
    await expect(as(users.proxy).eval(mint, 1, `${redis.prefix}key:{${digest}}`)).rejects.toThrow(
      /can't access|NOPERM/,
    );
    expect(await proxyCache.get(digest)).toEqual({ state: 'hit', key: record });
  });

  // The checked admission of a recalled record names the record next to the spend hashes (single node
  // only: on a cluster the proxy does not recall records, services/proxy/src/auth/proxy-auth.ts).
  it.skipIf(process.env.TOLLGATE_TEST_REDIS === 'cluster')(
    "runs the proxy's checked admission (it names the key record) with the proxy's user",
    async () => {
      const [keyId, accountId, digest] = [randomUUID(), randomUUID(), digestKey(randomUUID())];
      const recordKey = `${redis.prefix}key:{${digest}}`;
      await as(users.keys).hset(recordKey, 'v', '3', 's', 'ok');
      const admit = (version: number) =>
        createSpendStore(as(users.proxy), { prefix: redis.prefix }).admit({
          keyId,
          accountId,
          requestId: `gen-${randomUUID()}`,
          worstCaseUnits: toUnits('0.01'),
          limitUnits: toUnits('1'),
          period: 'd2026-11-20',
          now: Date.parse('2026-11-20T12:00:00Z'),
          check: {
            recordKey,
            version,
            counterKey: `${redis.prefix}rl:{${digest}}:1`,
            counterTtlMs: 60_000,
            rateLimit: null,
          },
        });
      // The script runs (no NOPERM): a stale record is caught, a current one asks for the spend
      // hashes, which are billing's to build.
      expect((await admit(2)).code).toBe('stale');
      expect((await admit(3)).code).toBe('rebuild');
    },
  );

  it("keeps each user to its own keys: spend is billing's (keys reads it), nothing outside the prefix", async () => {
    const spend = `${redis.prefix}spend:key:{${randomUUID()}}:${randomUUID()}`;
    await as(users.billing).hset(spend, 'all', '5');
    expect(await as(users.keys).hget(spend, 'all')).toBe('5');
    await expect(as(users.keys).hset(spend, 'all', '0')).rejects.toThrow(/NOPERM/);
    await expect(as(users.billing).hset(`${redis.prefix}key:x`, 'v', '1')).rejects.toThrow(/NOPERM/);
    await expect(as(users.proxy).get('tg:anything-else')).rejects.toThrow(/NOPERM/);
    await expect(as(users.proxy).flushall()).rejects.toThrow(/NOPERM/);
    expect(await as(users.proxy).incr(`${redis.prefix}rl:{x}:1`)).toBe(1);
  });

  it('lets the proxy write last use to every bucket, and only keys drain them (and the legacy hash)', async () => {
    const id = randomUUID();
    const proxy = as(users.proxy);
    const keys = as(users.keys);
    // 16 hash tags: on the cluster they fall on every master.
    for (const hash of lastUsedHashKeys(redis.prefix)) expect(await proxy.hset(hash, id, '1')).toBe(1);
    expect(await proxy.hset(lastUsedHashKey(redis.prefix, id), id, '2')).toBe(0);
    await expect(proxy.hset(legacyLastUsedHashKey(redis.prefix), id, '1')).rejects.toThrow(/NOPERM/);
    await expect(as(users.billing).hget(lastUsedHashKey(redis.prefix, id), id)).rejects.toThrow(/NOPERM/);
    expect(await keys.hset(legacyLastUsedHashKey(redis.prefix), id, '1')).toBe(1);
    for (const hash of [...lastUsedHashKeys(redis.prefix), legacyLastUsedHashKey(redis.prefix)])
      expect(await keys.del(hash)).toBe(1);
  });

  it('grants the cluster discovery commands and no other CLUSTER subcommand', async () => {
    const proxy = as(users.proxy);
    expect(String(await proxy.call('CLUSTER', 'INFO').catch((e: Error) => e.message))).not.toMatch(/NOPERM/);
    await expect(proxy.call('CLUSTER', 'GETKEYSINSLOT', '0', '10')).rejects.toThrow(/NOPERM/);
    await expect(proxy.call('CLUSTER', 'FAILOVER')).rejects.toThrow(/NOPERM/);
    for (const rules of Object.values(redisAclRules(redis.prefix)))
      expect(rules.filter((r) => r.startsWith('+cluster') || r === '-cluster')).toEqual(
        REDIS_CLUSTER_COMMANDS,
      );
  });
});

// Only on a cluster: the users exist on every node, and a cluster client needs the discovery grants.
describe.runIf(process.env.TOLLGATE_TEST_REDIS === 'cluster')('Redis Cluster: service users', () => {
  let redis: TestRedis;
  const full = login('proxy_c');
  const withoutDiscovery = login('proxy_nd');

  beforeAll(async () => {
    redis = await createTestRedis();
    await provisionRedis(redis.url, redis.prefix, { proxy: full });
  });
  afterAll(async () => {
    await dropRedisUsers(redis.url, [full.user, withoutDiscovery.user]).catch(() => {});
    await redis.cleanup();
  });

  it('exists on every node, masters and replicas (a promoted replica knows it)', async () => {
    const nodes = String(await (redis.client as Cluster).nodes('master')[0]!.call('CLUSTER', 'NODES'))
      .trim()
      .split('\n');
    expect(nodes).toHaveLength(6);
    for (const line of nodes) {
      const [host, port] = (line.split(' ')[1] ?? '').split('@')[0]!.split(':');
      const node = new Redis({ host, port: Number(port), maxRetriesPerRequest: 1 });
      try {
        expect(await node.call('ACL', 'GETUSER', full.user), `${host}:${port}`).not.toBeNull();
      } finally {
        node.disconnect();
      }
    }
  });

  it('a Cluster client of a user without CLUSTER SLOTS/INFO never gets ready (why they are granted)', async () => {
    // The proxy's rules as Redis 6 reads `-@dangerous` (the whole CLUSTER command refused).
    const rules = redisAclRules(redis.prefix).proxy.filter((r) => !REDIS_CLUSTER_COMMANDS.includes(r));
    const admin = (redis.client as Cluster).nodes('all');
    for (const node of admin)
      await node.call(
        'ACL',
        'SETUSER',
        withoutDiscovery.user,
        'reset',
        'on',
        `>${withoutDiscovery.password}`,
        ...rules,
        '-cluster',
      );
    const seed = new URL(redis.url);
    const connect = async (l: Login) => {
      const c = new Cluster([{ host: seed.hostname, port: Number(seed.port) }], {
        redisOptions: { username: l.user, password: l.password },
        clusterRetryStrategy: () => null,
        slotsRefreshTimeout: 2_000,
      });
      c.on('error', () => {}); // the refused slot map is reported as the command's rejection
      try {
        return await c.incr(`${redis.prefix}rl:{probe}:1`);
      } finally {
        c.disconnect();
      }
    };
    await expect(connect(withoutDiscovery)).rejects.toThrow();
    expect(await connect(full)).toBe(1);
  });
});
