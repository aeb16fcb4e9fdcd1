import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRedisClient, hashTag, isCluster, keySlot, parseRedisConnection } from './index';

describe('parseRedisConnection', () => {
  it('reads a node, a cluster seed URL and extra seeds', () => {
    expect(parseRedisConnection({ url: 'redis://u:p%40ss@h:6380' })).toMatchObject({
      cluster: false,
      username: 'u',
      password: 'p@ss',
      tls: false,
    });
    const c = parseRedisConnection({
      url: 'rediss+cluster://u:pw@a:7000',
      clusterNodes: 'b:7001, [::1]:7002',
    });
    expect(c).toMatchObject({ cluster: true, tls: true, username: 'u', password: 'pw' });
    expect(c.seeds).toEqual([
      { host: 'a', port: 7000 },
      { host: 'b', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    // A plain redis:// URL with REDIS_CLUSTER_NODES is a cluster (the URL gives the login).
    expect(parseRedisConnection({ url: 'redis://u:pw@a:7000', clusterNodes: 'b:7001' }).cluster).toBe(true);
  });

  it('refuses an unknown scheme and a malformed seed', () => {
    expect(() => parseRedisConnection({ url: 'http://a:1' })).toThrow(/unknown scheme/);
    expect(() => parseRedisConnection({ url: 'redis://a:1', clusterNodes: 'b' })).toThrow(/host:port/);
  });
});

describe('createRedisClient options', () => {
  const asked = {
    lazyConnect: true,
    enableAutoPipelining: true,
    commandTimeout: 1_000,
    clusterCommandTimeout: 3_000,
  };
  it('a node: auto-pipelined when asked, the node command timeout', () => {
    const node = createRedisClient({ url: 'redis://127.0.0.1:1' }, asked);
    expect(isCluster(node)).toBe(false);
    expect(node.options).toMatchObject({ enableAutoPipelining: true, commandTimeout: 1_000 });
    node.disconnect();
  });
  it('a cluster: never auto-pipelined (a MOVED reply would reach the caller), the cluster command timeout', () => {
    const cluster = createRedisClient({ url: 'redis+cluster://127.0.0.1:1' }, asked);
    expect(isCluster(cluster)).toBe(true);
    expect(cluster.options.enableAutoPipelining).toBe(false);
    expect((cluster.options as { redisOptions?: { commandTimeout?: number } }).redisOptions).toMatchObject({
      commandTimeout: 3_000,
    });
    cluster.disconnect();
  });
});

describe('hash slots', () => {
  it('reads the hash tag as Redis Cluster does', () => {
    expect(hashTag('p:spend:key:{acct}:k1')).toBe('acct');
    expect(hashTag('p:{}:x')).toBe('p:{}:x');
    expect(hashTag('plain')).toBe('plain');
    expect(hashTag('a{b}{c}')).toBe('b');
    // The figures of the Redis Cluster specification.
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
  });
});

// The run's Redis as the test kit hands it out (no import of @tollgate/testkit, which depends on this
// package): its local cluster in the `redis-cluster` vitest project, else REDIS_URL.
const runRedisUrl = () =>
  (process.env.TOLLGATE_TEST_REDIS === 'cluster' ? process.env.TOLLGATE_TEST_CLUSTER_URL : undefined) ??
  process.env.REDIS_URL ??
  'redis://127.0.0.1:6379';

describe('createRedisClient against the run Redis (a node, or the local cluster)', () => {
  it('connects a node or a cluster by URL, and computes the slots the server computes', async () => {
    const url = runRedisUrl();
    const prefix = `tgt:${process.env.TOLLGATE_TEST_RUN}:${randomBytes(4).toString('hex')}:`;
    const client = createRedisClient({ url });
    try {
      expect(isCluster(client)).toBe(url.startsWith('redis+cluster:'));
      await client.set(`${prefix}x:{acct-1}`, '1', 'EX', 60);
      expect(await client.get(`${prefix}x:{acct-1}`)).toBe('1');
      for (const key of [`${prefix}spend:acct:{a-1}`, 'foo', `${prefix}keyref:{${'f'.repeat(64)}}`])
        expect(Number(await client.call('CLUSTER', 'KEYSLOT', key).catch(() => keySlot(key)))).toBe(
          keySlot(key),
        );
    } finally {
      await client.del(`${prefix}x:{acct-1}`);
      client.disconnect();
    }
  });
});
