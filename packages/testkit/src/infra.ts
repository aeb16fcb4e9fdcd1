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

export function testInfra(env: NodeJS.ProcessEnv = process.env): TestInfra {
  return {
    databaseUrl: env.DATABASE_URL ?? LOCAL_INFRA.databaseUrl,
    redisUrl: env.REDIS_URL ?? LOCAL_INFRA.redisUrl,
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
