import { randomBytes } from 'node:crypto';
import { createRedisClient, isCluster, parseRedisConnection, type RedisClient } from '@tollgate/redis';
import amqp from 'amqplib';
import pg from 'pg';
import { runId, testInfra } from './infra';

export { expectContract } from './contract';
export {
  CLUSTER_URL_ENV,
  dockerAvailable,
  LOCAL_INFRA,
  runId,
  type TestInfra,
  testInfra,
  testUsagePartitions,
} from './infra';
export { freePort } from './ports';
export { seededRandom } from './random';
export { type LocalRedisCluster, startLocalRedisCluster } from './redis-cluster';
export { createTcpProxy, hostPortOf, type TcpProxy } from './tcp-proxy';

const suffix = () => randomBytes(4).toString('hex');

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** The environment variable naming the run's migrated template database (set by its global setup). */
export const TEMPLATE_DB_ENV = 'TOLLGATE_TEST_TEMPLATE_DB';

/**
 * A fresh Postgres database for one test file (or test). Dropped by drop() or at run end.
 *
 * Empty by default. With `migrated: true` it is a copy of the run's template database, which already
 * holds every service's schema at the latest migration (tests/support/template-db.ts builds it once
 * per `make test`): a copy takes ~60 ms where migrating three schemas takes ~700 ms, and the services
 * still run their migrations on start (finding nothing to do). Without a template (a config that does
 * not build one) the database is empty and the services migrate it as usual.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const { databaseUrl } = testInfra();
  const name = `tgt_${runId()}_${suffix()}`;
  const template = options.migrated ? process.env[TEMPLATE_DB_ENV] : undefined;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query(
      template ? `create database "${name}" template "${template}"` : `create database "${name}"`,
    );
  } finally {
    await admin.end();
  }
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      try {
        await c.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

export interface TestRedis {
  /** REDIS_URL for the code under test: the run's Redis, or its Redis Cluster (`redis+cluster://…`). */
  url: string;
  /** Key prefix for this test: pass it as REDIS_PREFIX to the code under test. */
  prefix: string;
  /** A client for assertions (no key prefix applied: use `prefix` yourself); a Cluster on a cluster. */
  client: RedisClient;
  /** True when this test goes to the run's local Redis Cluster (the `redis-cluster` vitest project). */
  cluster: boolean;
  cleanup(): Promise<void>;
}

/** Deletes every key under `prefix` (on a cluster: from every master, one key per command). */
export async function deleteByPrefix(client: RedisClient, prefix: string): Promise<void> {
  const nodes = isCluster(client) ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await Promise.all(keys.map((k) => client.del(k)));
    } while (cursor !== '0');
  }
}

/** A prefix of this run's own on the run's Redis (`testInfra().redisUrl`: a node, or the local cluster). */
export async function createTestRedis(options: { url?: string } = {}): Promise<TestRedis> {
  const url = options.url ?? testInfra().redisUrl;
  const prefix = `tgt:${runId()}:${suffix()}:`;
  const client = createRedisClient({ url }, { maxRetriesPerRequest: 2 });
  return {
    url,
    prefix,
    client,
    cluster: parseRedisConnection({ url }).cluster,
    async cleanup() {
      await deleteByPrefix(client, prefix);
      client.disconnect();
    },
  };
}

export interface TestAmqp {
  url: string;
  /** Name prefix for exchanges and queues: pass it as AMQP_PREFIX to the code under test. */
  prefix: string;
  /** Deletes the named queues and exchanges (those the code under test declared). */
  cleanup(names: { queues?: string[]; exchanges?: string[] }): Promise<void>;
}

export function createTestAmqp(): TestAmqp {
  const { amqpUrl } = testInfra();
  const prefix = `tgt.${runId()}.${suffix()}`;
  return {
    url: amqpUrl,
    prefix,
    async cleanup({ queues = [], exchanges = [] }) {
      const conn = await amqp.connect(amqpUrl);
      try {
        for (const q of queues) {
          const ch = await conn.createChannel();
          await ch.deleteQueue(q).catch(() => {});
          await ch.close().catch(() => {});
        }
        for (const e of exchanges) {
          const ch = await conn.createChannel();
          await ch.deleteExchange(e).catch(() => {});
          await ch.close().catch(() => {});
        }
      } finally {
        await conn.close().catch(() => {});
      }
    },
  };
}
