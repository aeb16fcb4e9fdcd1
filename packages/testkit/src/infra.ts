import { existsSync } from 'node:fs';

/** Where the test servers are. Set by the global setup (testcontainers) or by the environment. */
export interface TestInfra {
  databaseUrl: string;
  redisUrl: string;
  amqpUrl: string;
}

export const LOCAL_INFRA: TestInfra = {
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: 'redis://127.0.0.1:6379',
  amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
};

/**
 * The run's local Redis Cluster (`redis+cluster://…`), set by packages/testkit/src/cluster-setup.ts
 * (global setup of the `redis-cluster` vitest project). Tests of that project (env
 * `TOLLGATE_TEST_REDIS=cluster`) get it as their Redis; the other projects' tests keep REDIS_URL.
 */
export const CLUSTER_URL_ENV = 'TOLLGATE_TEST_CLUSTER_URL';

export function testInfra(env: NodeJS.ProcessEnv = process.env): TestInfra {
  const cluster = env.TOLLGATE_TEST_REDIS === 'cluster' ? env[CLUSTER_URL_ENV] : undefined;
  if (env.TOLLGATE_TEST_REDIS === 'cluster' && !cluster)
    throw new Error(
      `TOLLGATE_TEST_REDIS=cluster but ${CLUSTER_URL_ENV} is not set (run the redis-cluster project)`,
    );
  return {
    databaseUrl: env.DATABASE_URL ?? LOCAL_INFRA.databaseUrl,
    redisUrl: cluster ?? env.REDIS_URL ?? LOCAL_INFRA.redisUrl,
    amqpUrl: env.AMQP_URL ?? LOCAL_INFRA.amqpUrl,
  };
}

/** A Docker engine is reachable only if its socket exists (or DOCKER_HOST points at one). */
export function dockerAvailable(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.TOLLGATE_TEST_NO_DOCKER === '1') return false;
  return Boolean(env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

/** The id of this test run; every database, Redis prefix and queue name of the run carries it. */
export function runId(): string {
  const id = process.env.TOLLGATE_TEST_RUN;
  if (!id)
    throw new Error('TOLLGATE_TEST_RUN is not set: run tests through vitest (its global setup sets it)');
  return id;
}

/**
 * The usage partitions a test's stack or billing runs with: TOLLGATE_TEST_USAGE_PARTITIONS (the
 * `usage-partitions` vitest project sets 2), else 1.
 */
export function testUsagePartitions(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TOLLGATE_TEST_USAGE_PARTITIONS;
  if (raw === undefined || raw === '') return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`TOLLGATE_TEST_USAGE_PARTITIONS must be a positive integer, got ${raw}`);
  return n;
}
