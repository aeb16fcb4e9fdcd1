import { CLUSTER_URL_ENV } from './infra';
import { startLocalRedisCluster } from './redis-cluster';

/**
 * vitest global setup of the `redis-cluster` project (vitest.config.ts): starts this run's own local
 * Redis Cluster (3 masters + 3 replicas on free ports); the project's tests (`TOLLGATE_TEST_REDIS=cluster`)
 * get it from `testInfra()` (createTestRedis, every stack). Stopped at the end of the run.
 */
export default async function setup() {
  const cluster = await startLocalRedisCluster();
  process.env[CLUSTER_URL_ENV] = cluster.url;
  return async () => {
    await cluster.stop();
  };
}
