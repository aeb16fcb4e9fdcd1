import { defineConfig } from 'vitest/config';

/**
 * The suites that also run against a real local Redis Cluster (3 masters + replicas, started by the
 * `redis-cluster` project's global setup on free ports of its own): the spend guard's and the key
 * cache's (issue 31: CI runs them both ways). Keep this list short: each file runs twice.
 */
const CLUSTER_SUITES = [
  'packages/spend/src/**/*.test.ts',
  'packages/key-cache/src/**/*.test.ts',
  'packages/redis/src/**/*.test.ts',
  'services/billing/src/spend/spend-guard.test.ts',
  'services/proxy/src/auth/authenticate.test.ts',
  'services/keys/src/last-used/last-used.test.ts',
  'tests/credentials-redis.test.ts',
];

/**
 * The suites that also run with two usage partitions (issue 31: the publisher routes each account's
 * events to one of two single-active-consumer queues, billing consumes both): every end-to-end suite
 * through the whole stack, whose answers and records must not change with the partition count, and
 * billing's consumer suites (its test kit publishes each event to its account's partition, as the
 * proxy does): exactly-once on redelivery, a worker killed after commit, dead letters, a poison batch, the usage
 * checks and the refusal events.
 */
const PARTITION_SUITES = [
  'tests/e2e/**/*.test.ts',
  'tests/contract/**/*.test.ts',
  'services/billing/src/integration/proxy-spend.e2e.test.ts',
  'services/billing/src/usage/usage.worker.test.ts',
  'services/billing/src/usage/poison-batch.test.ts',
  'services/billing/src/usage/usage-checks.test.ts',
  'services/billing/src/refusals/refusals.test.ts',
];

/**
 * The dashboard's browser suites (Debian's Chromium through playwright-core): each page load, click
 * and screenshot is CPU-bound, and with other files' stacks on the same two cores their waits for a
 * page to settle ran past their deadlines. They run in the `browser` project, one file at a time,
 * after every other file (vitest runs a project with `maxWorkers: 1` as its own sequential group,
 * last).
 */
const BROWSER_SUITES = [
  'tests/dashboard/browser*.test.ts',
  'tests/dashboard/*-browser.test.ts',
  'tests/dashboard/sso.test.ts',
];

export default defineConfig({
  test: {
    // The fault suite runs on its own (`make test-faults`, tests/faults/vitest.config.ts).
    exclude: ['tests/faults/**', '**/node_modules/**'],
    // A test's work is fixed; its wall time is not: on a loaded 2-core host (load average 45, the
    // machine shared with other suites) CPU-bound tests take ~20× their quiet time — a password hash
    // (scrypt, N=2^17) 1.1 s of CPU and 6 s of wall time, a browser page load 30 s and more. At 30 s,
    // tests that pass in 2-10 s on a quiet host timed out (auth service, dashboard browser suites, the
    // admin CLI). A real hang still fails, 90 s later.
    testTimeout: 120_000,
    // A whole stack (Postgres template, three services, RabbitMQ) can take over a minute on a loaded host.
    hookTimeout: 120_000,
    // testkit's (servers, run id, cleanup), then the run's migrated template database.
    globalSetup: ['packages/testkit/src/global-setup.ts', 'tests/support/template-db.ts'],
    pool: 'forks',
    // Three test files at a time, whatever the core count (vitest's default is cores - 1: one file at
    // a time on a 2-core CI host, which left one core idle and most of the other waiting on servers,
    // stacks and the simulator's pacing). Every file is isolated (its own fork, database, Redis
    // prefix, AMQP names, free ports; a Redis Cluster of its own to fail over), so files never see
    // each other. VITEST_MAX_WORKERS=N (or --maxWorkers=N) overrides it; 1 runs them one by one.
    maxWorkers: 3,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: [
            'packages/*/src/**/*.test.ts',
            'services/*/src/**/*.test.ts',
            'services/*/test/**/*.test.ts',
            'tests/**/*.test.ts',
          ],
          exclude: ['tests/faults/**', '**/node_modules/**', ...BROWSER_SUITES],
        },
      },
      {
        extends: true,
        // A page's fetch after a reload or a navigation can take seconds on a slow host: an
        // `expect.poll` waits up to 30 s (vitest's default is 1 s) and still ends when it passes.
        test: {
          name: 'browser',
          include: BROWSER_SUITES,
          maxWorkers: 1,
          expect: { poll: { timeout: 30_000 } },
        },
      },
      {
        extends: true,
        test: {
          name: 'redis-cluster',
          include: CLUSTER_SUITES,
          env: { TOLLGATE_TEST_REDIS: 'cluster' },
          globalSetup: ['packages/testkit/src/cluster-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'usage-partitions',
          include: PARTITION_SUITES,
          env: { TOLLGATE_TEST_USAGE_PARTITIONS: '2' },
        },
      },
    ],
  },
});
