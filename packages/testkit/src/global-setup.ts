import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { dockerAvailable, testInfra } from './infra';

/**
 * vitest global setup: picks the servers (local ones named by DATABASE_URL / REDIS_URL / AMQP_URL,
 * defaulting to 127.0.0.1; testcontainers only when none is named and a Docker engine exists), gives
 * the run an id, and at the end drops every database and Redis key the run created.
 */
export default async function setup() {
  process.env.TOLLGATE_TEST_RUN ??= `r${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const stops: Array<() => Promise<unknown>> = [];

  const named = process.env.DATABASE_URL || process.env.REDIS_URL || process.env.AMQP_URL;
  if (!named && dockerAvailable()) {
    try {
      const { GenericContainer, Wait } = await import('testcontainers');
      const [pgc, redisc, rabbitc] = await Promise.all([
        new GenericContainer('postgres:16-alpine')
          .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
          .withExposedPorts(5432)
          .withWaitStrategy(Wait.forLogMessage(/ready to accept connections/, 2))
          .start(),
        new GenericContainer('redis:7-alpine').withExposedPorts(6379).start(),
        new GenericContainer('rabbitmq:3.13-alpine')
          .withExposedPorts(5672)
          .withWaitStrategy(Wait.forLogMessage(/Server startup complete/))
          .start(),
      ]);
      process.env.DATABASE_URL = `postgres://postgres@${pgc.getHost()}:${pgc.getMappedPort(5432)}/postgres`;
      process.env.REDIS_URL = `redis://${redisc.getHost()}:${redisc.getMappedPort(6379)}`;
      process.env.AMQP_URL = `amqp://guest:guest@${rabbitc.getHost()}:${rabbitc.getMappedPort(5672)}`;
      stops.push(
        () => pgc.stop(),
        () => redisc.stop(),
        () => rabbitc.stop(),
      );
    } catch (err) {
      console.warn(`testcontainers could not start containers, using local servers: ${String(err)}`);
    }
  }
  const infra = testInfra();
  process.env.DATABASE_URL = infra.databaseUrl;
  process.env.REDIS_URL = infra.redisUrl;
  process.env.AMQP_URL = infra.amqpUrl;
  const run = process.env.TOLLGATE_TEST_RUN;

  return async () => {
    const client = new pg.Client({ connectionString: infra.databaseUrl });
    try {
      await client.connect();
      const { rows } = await client.query<{ datname: string }>(
        `select datname from pg_database where datname like $1`,
        [`tgt_${run}_%`],
      );
      for (const { datname } of rows) await client.query(`drop database if exists "${datname}" with (force)`);
    } catch (err) {
      console.warn(`test database cleanup failed: ${String(err)}`);
    } finally {
      await client.end().catch(() => {});
    }
    const redis = new Redis(infra.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `tgt:${run}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
    } catch (err) {
      console.warn(`test redis cleanup failed: ${String(err)}`);
    } finally {
      redis.disconnect();
    }
    for (const stop of stops) await stop().catch(() => {});
  };
}
