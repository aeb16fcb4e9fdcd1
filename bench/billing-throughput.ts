/**
 * Billing worker benchmark (real Postgres, Redis, RabbitMQ from the test kit defaults).
 *
 *   pnpm exec tsx bench/billing-throughput.ts [--events 20000] [--keys 200] [--samples 300]
 *     [--events-per-message 1] [--checks signature,cost,key,time]
 *
 * 1. Throughput: publishes N usage events (spread over K keys / K/10 accounts, Redis spend hashes
 *    loaded for all of them so every batch also updates Redis) while the worker is stopped, then
 *    starts the worker and times until every event is committed in Postgres.
 * 2. Latency: with a background load of ~1000 events/s, publishes single events and polls
 *    GET /generation until each is visible; reports p50/p99/max of publish → visible.
 *
 * Events are published as the proxy publishes them: signed with the proxy's (development) key, one
 * message per `--events-per-message` events (the proxy packs up to 100 under load), priced from
 * their tokens, for keys that exist in a real keys service (billing asks it who owns each key once).
 * `--checks none` runs billing without its usage checks (the before/after comparison).
 *
 * The worker runs in this process: the drain's CPU µs per event (`process.cpuUsage`, the 20 ms
 * count poll included) is the figure to compare on a shared machine. `BENCH_CPU_PROF=<file>` writes
 * a V8 CPU profile of the drain alone (open it in Chrome DevTools).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { DEV_SERVICE_KEYS, devServiceSigner, parsePrivateKey } from '@tollgate/auth';
import { createMessageSigner, type UsageEvent, usageBatchBody, usageTopology } from '@tollgate/events';
import { loadConfig as loadKeysConfig, startKeysService } from '@tollgate/keys';
import { createTestAmqp, createTestDatabase, createTestRedis } from '@tollgate/testkit';
import amqp from 'amqplib';
import { loadConfig, startBilling } from '../services/billing/src/index';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    keys: { type: 'string', default: '200' },
    samples: { type: 'string', default: '300' },
    'batch-size': { type: 'string', default: '200' },
    'events-per-message': { type: 'string', default: '1' },
    checks: { type: 'string', default: 'signature,cost,key,time' },
  },
});
const PER_MESSAGE = Math.max(1, Number(values['events-per-message']));
const N = Number(values.events);
const K = Number(values.keys);
const SAMPLES = Number(values.samples);

process.env.TOLLGATE_TEST_RUN ??= `bench${Date.now().toString(36)}`;
const [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
const mq = createTestAmqp();
const topology = usageTopology(mq.prefix);
const env = {
  PORT: '0',
  HOST: '127.0.0.1',
  DATABASE_URL: db.url,
  REDIS_URL: redis.url,
  REDIS_PREFIX: redis.prefix,
  AMQP_URL: mq.url,
  AMQP_PREFIX: mq.prefix,
  LOG_LEVEL: 'warn',
  BATCH_SIZE: values['batch-size'],
  PREFETCH: String(Number(values['batch-size']) * 3),
  BATCH_TIMEOUT_MS: '20',
  USAGE_CHECKS: values.checks,
};

// The keys service billing asks who owns each key (its own schema in the same database).
const keysService = await startKeysService(
  loadKeysConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    BILLING_URL: 'http://127.0.0.1:9',
    LOG_LEVEL: 'warn',
  }),
);
Object.assign(env, { KEYS_URL: keysService.url });

const accounts: string[] = [];
for (let a = 0; a < Math.max(1, Math.floor(K / 10)); a++) {
  const slug = `bench-${randomUUID().slice(0, 8)}`;
  accounts.push((await keysService.runtime.accounts.create({ slug, name: slug })).id);
}
const keys: Array<{ keyId: string; accountId: string; i: number }> = [];
for (let i = 0; i < K; i++) {
  const accountId = accounts[i % accounts.length] as string;
  const { row } = await keysService.runtime.keys.create(accountId, { name: `k${i}`, scope: 'inference' });
  keys.push({ keyId: row.id, accountId, i });
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const requestId = () => {
  let t = '';
  for (const b of randomBytes(20)) t += ALNUM[b % 62];
  return `gen-${Math.floor(Date.now() / 1000)}-${t}`;
};
function event(i: number): UsageEvent {
  const k = keys[i % keys.length] as (typeof keys)[number];
  const now = new Date().toISOString();
  return {
    type: 'usage',
    version: 1,
    id: requestId(),
    account_id: k.accountId,
    key_id: k.keyId,
    model: 'openai/gpt-4o-mini',
    provider_name: 'sim',
    upstream_model: 'gpt-4o-mini',
    upstream_id: 'chatcmpl-bench',
    app: null,
    streamed: i % 2 === 0,
    cancelled: false,
    finish_reason: 'stop',
    usage_source: 'provider',
    tokens: { prompt: 120, completion: 300, cached: 0, cache_write: 0, reasoning: 0 },
    cost: '0.000198',
    is_byok: false,
    error: null,
    started_at: now,
    finished_at: now,
    latency_ms: 200,
    generation_time_ms: 1500,
  };
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

const conn = await amqp.connect(mq.url);
const ch = await conn.createConfirmChannel();
const signer = createMessageSigner('proxy', parsePrivateKey(DEV_SERVICE_KEYS.proxy.privateKey));
const publish = async (events: UsageEvent[]) => {
  for (let i = 0; i < events.length; i += PER_MESSAGE) {
    const bodies = events.slice(i, i + PER_MESSAGE).map((e) => Buffer.from(JSON.stringify(e)));
    const body = bodies.length === 1 ? (bodies[0] as Buffer) : usageBatchBody(bodies);
    ch.publish(topology.exchange, topology.routingKey, body, {
      persistent: true,
      type: bodies.length === 1 ? 'usage.v1' : 'usage.batch.v1',
      headers: signer.headers(body, Date.now()),
    });
  }
  await ch.waitForConfirms();
};

// API-only instance: declares nothing on the broker, so declare through a worker start/stop.
let billing = await startBilling(loadConfig({ ...env }));
await billing.consumer?.ready();
await billing.consumer?.close();
const proxyIdentity = devServiceSigner('proxy');
const serviceToken = () => proxyIdentity.sign('billing'); // spend rebuild: the proxy's route
// Load the Redis spend hashes (as the proxy's guard does on first use) so the worker updates them.
await Promise.all(
  keys.map(async (k) =>
    fetch(`${billing.url}/internal/spend/rebuild`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-token': await serviceToken() },
      body: JSON.stringify({ account_id: k.accountId, key_id: k.keyId }),
    }).then((r) => r.body?.cancel()),
  ),
);
await billing.close();

const count = async () =>
  Number(
    (
      await billing.db
        .selectFrom('billing.generations')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

// ---- 1. throughput ----
billing = await startBilling(loadConfig({ ...env, WORKER_ENABLED: 'false' }));
const t0 = performance.now();
for (let i = 0; i < N; i += 1000)
  await publish(Array.from({ length: Math.min(1000, N - i) }, (_, j) => event(i + j)));
const publishSecs = (performance.now() - t0) / 1000;
await billing.close();

const profiler = process.env.BENCH_CPU_PROF ? new Session() : null;
if (profiler) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.start');
}
const start = performance.now();
const cpuStart = process.cpuUsage();
billing = await startBilling(loadConfig(env));
for (;;) {
  const n = await count();
  if (n >= N) break;
  await new Promise((r) => setTimeout(r, 20));
}
const secs = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpuStart);
if (profiler && process.env.BENCH_CPU_PROF) {
  const { profile } = await profiler.post('Profiler.stop');
  writeFileSync(process.env.BENCH_CPU_PROF, JSON.stringify(profile));
  profiler.disconnect();
}
const spendRows = await billing.db
  .selectFrom('billing.key_spend')
  .select((eb) => eb.fn.sum<string>('amount').as('s'))
  .where('period', '=', 'all')
  .executeTakeFirstOrThrow();

console.log(
  `throughput: ${N} events (${K} keys, ${accounts.length} accounts, ${PER_MESSAGE} per message, checks: ${values.checks}) published in ${publishSecs.toFixed(2)} s;`,
);
console.log(
  `  worker drained them into Postgres in ${secs.toFixed(2)} s (incl. start) = ${Math.round(N / secs)} events/s; ` +
    `all-time spend ${spendRows.s} USD (expected ${(N * 0.000198).toFixed(6)})`,
);
console.log(
  `  worker CPU (this process, start included): ${((cpu.user + cpu.system) / N).toFixed(1)} µs/event ` +
    `(user ${(cpu.user / N).toFixed(1)}, system ${(cpu.system / N).toFixed(1)})`,
);

// ---- 2. publish → visible latency, with background load ----
let loadRunning = true;
const load = (async () => {
  let i = 0;
  while (loadRunning) {
    await publish(Array.from({ length: 50 }, () => event(i++)));
    await new Promise((r) => setTimeout(r, 50)); // ~1000 events/s
  }
})();
const latencies: number[] = [];
for (let s = 0; s < SAMPLES; s++) {
  const e = event(s);
  const k = { keyId: e.key_id, accountId: e.account_id };
  const headers = {
    'x-service-token': await proxyIdentity.sign('billing', { kind: 'key', ...k, scope: 'inference' }),
  };
  const t = performance.now();
  await publish([e]);
  for (;;) {
    const r = await fetch(`${billing.url}/generation?id=${e.id}`, { headers });
    await r.body?.cancel();
    if (r.status === 200) break;
    await new Promise((res) => setTimeout(res, 2));
  }
  latencies.push(performance.now() - t);
}
loadRunning = false;
await load;
latencies.sort((a, b) => a - b);
console.log(
  `latency publish → visible (GET /generation 200), ${SAMPLES} samples under ~1000 events/s: ` +
    `p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${(latencies.at(-1) ?? 0).toFixed(1)} ms`,
);

await billing.close();
await keysService.close();
await conn.close();
await mq.cleanup({
  queues: [topology.queue, topology.deadLetterQueue],
  exchanges: [topology.exchange, topology.deadLetterExchange],
});
await redis.cleanup();
await db.drop();
