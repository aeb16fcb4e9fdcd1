/**
 * Scale-out bench (issue 31): the stack on one Redis node with one usage partition vs on a local
 * 3-master Redis Cluster with two usage partitions (a billing worker each), same load, one after the
 * other. `pnpm bench:scale` (or `make bench-scale`); ≈ 2 min with the defaults.
 *
 *   SCALE_SECONDS=10 SCALE_CONCURRENCY=32 SCALE_BACKLOG_SECONDS=6 SCALE_ONLY=single|cluster pnpm bench:scale
 *
 * Each configuration is a fresh stack of processes (tests/faults/harness.ts: provider-sim, keys,
 * billing API + workers, the proxy; real RabbitMQ and Postgres; the cluster from
 * `startLocalRedisCluster()`), 16 keys without a limit over 8 accounts (spread over the masters'
 * slots and the partitions). Measures, per configuration:
 *   - proxy: chat completions answered per second by a closed loop of SCALE_CONCURRENCY clients
 *     (non-streamed, the simulator answering at once), with the billing workers running; p50/p99;
 *   - billing: the workers SIGSTOPped while the proxy runs SCALE_BACKLOG_SECONDS, then resumed: events
 *     committed per second draining that backlog (every partition's worker at once).
 * Prints one table; BENCH_OUT writes the figures as JSON. On a shared 2-core machine the load
 * generator, the proxy, Redis (6 processes on a cluster), RabbitMQ, Postgres and billing share two
 * cores: the figures say how the configurations compare there, not what a shard or partition holds.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { type LocalRedisCluster, startLocalRedisCluster } from '@tollgate/testkit';

// The test kit's names (database, Redis prefix, RabbitMQ prefix) carry this run id.
process.env.TOLLGATE_TEST_RUN ??= `scale${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
// Keys without a practical limit: the bench measures throughput, not refusals (read by the harness).
process.env.FAULTS_KEY_LIMIT ??= '1000000';
process.env.FAULTS_LOG_LEVEL ??= 'error';
const { FaultStack, sleep } = await import('../tests/faults/harness');
type Stack = InstanceType<typeof FaultStack>;

const SECONDS = Number(process.env.SCALE_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.SCALE_CONCURRENCY ?? 32);
const BACKLOG_SECONDS = Number(process.env.SCALE_BACKLOG_SECONDS ?? 6);
const ONLY = process.env.SCALE_ONLY ?? '';
const SIM = { ttft_ms: 0, inter_token_ms: 0, completion_tokens: 24 };
const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Setup {
  name: string;
  cluster: boolean;
  partitions: number;
}

interface Result {
  setup: string;
  reqPerSec: number;
  served: number;
  refused: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests answered while billing was stopped, and the records that appeared once it resumed. */
  backlogServed: number;
  backlog: number;
  drainEventsPerSec: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);

/** A closed loop of `CONCURRENCY` clients over the keys for `seconds`: statuses and latencies. */
async function closedLoop(stack: Stack, seconds: number) {
  const until = Date.now() + seconds * 1000;
  const latencies: number[] = [];
  let served = 0;
  let refused = 0;
  let n = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < until) {
        const key = stack.keys[n++ % stack.keys.length];
        if (!key) return;
        const o = await stack.request(key, false, { sim: SIM });
        latencies.push(o.endedAt - o.startedAt);
        if (o.status === 200) served++;
        else refused++;
      }
    }),
  );
  return { served, refused, latencies: latencies.sort((a, b) => a - b) };
}

const recordCount = async (stack: Stack) =>
  Number((await stack.pool.query<{ n: string }>('select count(*) as n from billing.generations')).rows[0]?.n);

async function waitForRecords(stack: Stack, count: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const have = await recordCount(stack);
    if (have >= count || Date.now() > deadline) return have;
    await sleep(50);
  }
}

/** Waits until the usage queues are empty and the record count holds still; returns it. */
async function settle(stack: Stack): Promise<number> {
  const deadline = Date.now() + 60_000;
  let last = -1;
  for (;;) {
    const [{ queue }, have] = await Promise.all([stack.queueDepths(), recordCount(stack)]);
    if ((queue === 0 && have === last) || Date.now() > deadline) return have;
    last = have;
    await sleep(300);
  }
}

async function measure(setup: Setup): Promise<Result> {
  let cluster: LocalRedisCluster | null = null;
  let stack: Stack | null = null;
  try {
    if (setup.cluster) cluster = await startLocalRedisCluster();
    stack = new FaultStack({
      ...(cluster ? { redisUrl: cluster.url } : {}),
      usagePartitions: setup.partitions,
      billingEnv: { WORKER_ENABLED: 'false', CONCURRENT_BATCHES: '1', BATCH_SIZE: '200', PREFETCH: '400' },
    });
    await stack.start();
    const workers = [];
    for (let p = 0; p < setup.partitions; p++)
      workers.push(await stack.startBilling({ WORKER_ENABLED: 'true', USAGE_WORKER_PARTITIONS: String(p) }));
    await stack.createKeys(16, '1000000', 8);
    log(`${setup.name}: stack up, warming up`);
    await closedLoop(stack, 2);

    const live = await closedLoop(stack, SECONDS);
    log(`${setup.name}: ${(live.served / SECONDS).toFixed(0)} req/s; stopping billing for the backlog`);
    const settled = await settle(stack);
    for (const w of workers) w.child.kill('SIGSTOP');
    const backlogRun = await closedLoop(stack, BACKLOG_SECONDS);
    await sleep(1000); // the proxy's last publishes reach the queue
    const target = settled + backlogRun.served;
    log(`${setup.name}: ${backlogRun.served} requests answered with billing stopped; resuming it`);
    const resumedAt = Date.now();
    for (const w of workers) w.child.kill('SIGCONT');
    const done = await waitForRecords(stack, target, 120_000);
    const drainMs = Date.now() - resumedAt;
    return {
      setup: setup.name,
      reqPerSec: live.served / SECONDS,
      served: live.served,
      refused: live.refused,
      p50Ms: quantile(live.latencies, 0.5),
      p99Ms: quantile(live.latencies, 0.99),
      backlogServed: backlogRun.served,
      backlog: done - settled,
      drainEventsPerSec: ((done - settled) * 1000) / drainMs,
    };
  } finally {
    await stack?.close();
    await cluster?.stop();
  }
}

const setups: Setup[] = [
  { name: 'single Redis, 1 partition', cluster: false, partitions: 1 },
  { name: '3-master Redis Cluster, 2 partitions', cluster: true, partitions: 2 },
].filter((s) => !ONLY || (ONLY === 'cluster') === s.cluster);

const results: Result[] = [];
for (const setup of setups) results.push(await measure(setup));

const load = os.loadavg().map((l) => l.toFixed(2));
process.stdout.write(
  `\nScale-out bench, ${os.availableParallelism()} cores, load average ${load.join(' ')} (shared machine: ` +
    `compare the rows, do not read them as capacity). ${CONCURRENCY} clients, ${SECONDS} s live, ` +
    `${BACKLOG_SECONDS} s of backlog.\n\n` +
    '| setup | proxy req/s | p50 ms | p99 ms | refused | answered with billing stopped | records then drained | billing drain events/s |\n' +
    '|---|---|---|---|---|---|---|---|\n' +
    results
      .map(
        (r) =>
          `| ${r.setup} | ${r.reqPerSec.toFixed(0)} | ${r.p50Ms} | ${r.p99Ms} | ${r.refused} | ${r.backlogServed} | ${r.backlog} | ${r.drainEventsPerSec.toFixed(0)} |`,
      )
      .join('\n') +
    '\n',
);
if (process.env.BENCH_OUT)
  writeFileSync(
    process.env.BENCH_OUT,
    `${JSON.stringify({ at: new Date().toISOString(), load, results }, null, 2)}\n`,
  );
process.exit(0);
