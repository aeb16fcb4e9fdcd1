import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import pg from 'pg';
import { runId, testInfra } from './infra';

export { expectContract } from './contract';
export { dockerAvailable, LOCAL_INFRA, runId, type TestInfra, testInfra } from './infra';
export { seededRandom } from './random';
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
  url: string;
  /** Key prefix for this test: pass it as REDIS_PREFIX to the code under test. */
  prefix: string;
  /** A client for assertions (no key prefix applied: use `prefix` yourself). */
  client: Redis;
  cleanup(): Promise<void>;
}

export async function createTestRedis(): Promise<TestRedis> {
  const { redisUrl } = testInfra();
  const prefix = `tgt:${runId()}:${suffix()}:`;
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  return {
    url: redisUrl,
    prefix,
    client,
    async cleanup() {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await client.del(...keys);
      } while (cursor !== '0');
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
