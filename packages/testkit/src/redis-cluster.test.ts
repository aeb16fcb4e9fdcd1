import { keySlot } from '@tollgate/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask, type LocalRedisCluster, startLocalRedisCluster } from './redis-cluster';

const field = (info: string, name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];

// The failover test's replicas must hold their own master's data. They did not always: the six nodes
// shared one working directory, and a replica's full sync renames the RDB it received to
// `<dir>/dump.rdb` before loading it; the three replicas sync at the same moment, so under CPU load
// one loaded another shard's file — another master's keys, none of its own master's, at its own
// master's replication offset. Promoted by CLUSTER FAILOVER, it lacked whole spend hashes its old
// master had (cluster-failover.test.ts failed 4 runs in 20). Since the test kit waits for the first
// sync before any write, every RDB is empty then and a swapped one would not show: the keys written
// here after it are checked through the replication stream, and the directories are checked apart.
describe('local Redis Cluster (test kit)', () => {
  let cluster: LocalRedisCluster;
  beforeAll(async () => {
    cluster = await startLocalRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('gives every node its own directory, and every replica its own master data set after its first sync', async () => {
    const ports = cluster.nodes.map((n) => Number(n.split(':')[1]));
    const dirs = await Promise.all(
      ports.map(async (p) => ((await ask(p, 'CONFIG', 'GET', 'dir')) as string[])[1]),
    );
    expect(new Set(dirs).size).toBe(6);

    // 300, 301 and 302 keys on the three masters, each master's in one slot it serves.
    const masters = await cluster.masters();
    expect(masters).toHaveLength(3);
    const tags = new Map<number, string>();
    for (let i = 0; tags.size < 3; i++) {
      const owner = await cluster.ownerOf(keySlot(`{tag${i}}`));
      if (!tags.has(owner)) tags.set(owner, `tag${i}`);
    }
    await Promise.all(
      masters.map(async (port, n) => {
        const m = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
        try {
          const p = m.pipeline();
          for (let i = 0; i < 300 + n; i++) p.hset(`tk:{${tags.get(port)}}:${i}`, 'n', String(i));
          await p.exec();
        } finally {
          m.disconnect();
        }
      }),
    );

    // Each replica, once synchronised at its master's offset, has its master's keys and no other.
    for (const replica of ports.filter((p) => !masters.includes(p))) {
      let info = '';
      let masterInfo = '';
      const deadline = Date.now() + 30_000;
      for (;;) {
        info = String(await ask(replica, 'INFO', 'replication'));
        const master = Number(field(info, 'master_port'));
        masterInfo = master ? String(await ask(master, 'INFO', 'replication')) : '';
        const synced =
          field(info, 'master_link_status') === 'up' &&
          field(info, 'slave_repl_offset') === field(masterInfo, 'master_repl_offset');
        if (synced || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const master = Number(field(info, 'master_port'));
      expect(field(info, 'master_link_status')).toBe('up');
      expect(field(info, 'slave_repl_offset')).toBe(field(masterInfo, 'master_repl_offset'));
      expect(await ask(replica, 'DBSIZE')).toBe(300 + masters.indexOf(master));
      // RANDOMKEY names no key: the replica answers it from its own data set.
      for (let i = 0; i < 5; i++)
        expect(String(await ask(replica, 'RANDOMKEY'))).toContain(`{${tags.get(master)}}`);
    }
  }, 60_000);
});
