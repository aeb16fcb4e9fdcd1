/**
 * The fault suite (issue 13): the real stack as processes, under generated load (streamed and not,
 * several keys, some at their limit), through process and server failures. Every scenario ends with
 * the reconciliation of `FaultStack.reconcile` and prints its figures. Shared servers are never
 * stopped: outages are made with TCP fault proxies (`createTcpProxy`) in front of them.
 * Runs with `make test-faults` (CI calls it), not in `make test`.
 */
import { createTcpProxy, hostPortOf, type TcpProxy, testInfra } from '@tollgate/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FaultStack,
  type Figures,
  type KeyUnderTest,
  type Outcome,
  report,
  sleep,
  stopService,
} from './harness';
import { type PrivatePostgres, type PrivateRedis, startPrivateRedis } from './servers';

const RABBIT_OUTAGE_MS = Number(process.env.FAULTS_RABBIT_OUTAGE_MS ?? 30_000);
const POSTGRES_OUTAGE_MS = Number(process.env.FAULTS_POSTGRES_OUTAGE_MS ?? 30_000);
const REDIS_OUTAGE_MS = Number(process.env.FAULTS_REDIS_OUTAGE_MS ?? 10_000);

const countStatuses = (outcomes: Outcome[]) => {
  const m: Record<string, number> = {};
  for (const o of outcomes) m[o.status] = (m[o.status] ?? 0) + 1;
  return m;
};

let stack: FaultStack | null = null;
const proxies: TcpProxy[] = [];
const servers: Array<PrivateRedis | PrivatePostgres> = [];
afterEach(async () => {
  await stack?.close();
  stack = null;
  for (const p of proxies.splice(0)) await p.close();
  for (const s of servers.splice(0)) await s.close();
});

function expectReconciled(f: Figures, options: { allowRefused?: boolean } = {}) {
  expect(f.served).toBeGreaterThan(20);
  expect(f.lost).toBe(0);
  expect(f.duplicated).toBe(0);
  expect(f.wrongCost).toBe(0);
  expect(f.unexplainedRecords).toBe(0);
  expect(f.sumMismatches).toBe(0);
  expect(f.overshot).toBe(0);
  expect(f.queue).toBe(0);
  expect(f.dlq).toBe(0);
  expect(f.spooled).toBe(0);
  // Refusals are limits reached (403) or credits (402), never a 5xx unless the scenario allows it.
  if (!options.allowRefused)
    for (const status of Object.keys(f.refusedByStatus)) expect(['402', '403', '429']).toContain(status);
}

/** Runs load in the background; `stop()` ends it and returns the outcomes. */
function backgroundLoad(s: FaultStack, concurrency = 4, pauseMs = 20) {
  let done = false;
  const running = s.load({ concurrency, pauseMs, until: () => done });
  return {
    async stop(): Promise<Outcome[]> {
      done = true;
      return running;
    },
  };
}

/** Requests with `keys` (one client each, `pauseMs` apart) until stopped: the revoked/disabled probes. */
function probeLoad(s: FaultStack, keys: KeyUnderTest[], pauseMs = 100) {
  let done = false;
  const outcomes: Outcome[] = [];
  const running = Promise.all(
    keys.map(async (k, i) => {
      while (!done) {
        outcomes.push(await s.request(k, i % 2 === 0));
        await sleep(pauseMs);
      }
    }),
  );
  return {
    async stop(): Promise<Outcome[]> {
      done = true;
      await running;
      return outcomes;
    },
  };
}

/** Retries a key change refused while a dependency reconnects (503), for up to `ms`. */
async function eventually(change: () => Promise<void>, ms = 15_000): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await change();
      return Date.now();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

/**
 * The 503s of requests sent in [from, to): how many, and how long after `from` the last one was
 * sent (0 = none) — the refusal window after a dependency came back.
 */
function refusals(outcomes: Outcome[], from: number, to: number) {
  const inWindow = outcomes.filter((o) => o.startedAt >= from && o.startedAt < to);
  const refused = inWindow.filter((o) => o.status === 503);
  const last = refused.reduce((m, o) => Math.max(m, o.startedAt), from);
  return { sent: inWindow.length, refused503: refused.length, lastRefusalMs: last - from };
}

describe('fault suite', () => {
  it('1. RabbitMQ unreachable for 30 s, then the broker connection cut: nothing lost, nothing doubled', async () => {
    const amqpProxy = await createTcpProxy(hostPortOf(testInfra().amqpUrl));
    proxies.push(amqpProxy);
    stack = new FaultStack({ amqpUrl: (base) => amqpProxy.url(base) });
    await stack.start();
    await stack.createKeys(6);
    const load = backgroundLoad(stack);
    await sleep(2000);
    await amqpProxy.stop();
    await sleep(RABBIT_OUTAGE_MS);
    await amqpProxy.start();
    await sleep(3000);
    await amqpProxy.stop(); // the connection cut (and refused for a moment)
    await amqpProxy.start();
    const restoredAt = Date.now();
    await sleep(2000);
    const outcomes = await load.stop();
    const f = await stack.reconcile(outcomes, restoredAt);
    report(`RabbitMQ unreachable ${RABBIT_OUTAGE_MS / 1000} s + connection cut`, f);
    expectReconciled(f);
  }, 180_000);

  it('2. billing worker SIGKILLed mid-batch and restarted, with two more workers consuming at once', async () => {
    stack = new FaultStack();
    await stack.start();
    await stack.createKeys(6);
    const w1 = await stack.startBilling();
    await stack.startBilling();
    const load = backgroundLoad(stack, 6, 0);
    await sleep(3000);
    await stopService(w1, 'SIGKILL');
    const killedAt = Date.now();
    await sleep(1000);
    await stack.startBilling();
    await sleep(2000);
    const outcomes = await load.stop();
    const f = await stack.reconcile(outcomes, killedAt);
    report('billing SIGKILL mid-batch + restart, 3 workers', f);
    expectReconciled(f);
  }, 180_000);

  it('3. Redis restarted empty, then unreachable for 10 s: revoked/disabled keys never admitted, prompt recovery', async () => {
    const redis = await startPrivateRedis();
    servers.push(redis);
    const redisProxy = await createTcpProxy({ host: '127.0.0.1', port: redis.port });
    proxies.push(redisProxy);
    stack = new FaultStack({ redisUrl: `redis://127.0.0.1:${redisProxy.port}` });
    await stack.start();
    await stack.createKeys(6);
    const revokedBefore = await stack.extraKey('revoked-before-restart');
    const revokedAfter = await stack.extraKey('revoked-after-restart');
    const disabledAfter = await stack.extraKey('disabled-during-outage');
    const blockedAt = new Map<string, number>(stack.blockedKeys.map((k) => [k.id, 0]));
    const load = backgroundLoad(stack);
    const probes = probeLoad(stack, [...stack.blockedKeys, revokedBefore, revokedAfter, disabledAfter]);
    await sleep(2000);
    await stack.revoke(revokedBefore);
    blockedAt.set(revokedBefore.id, Date.now());
    await sleep(500);

    // Restarted empty: SIGKILL (no persistence), down ~1 s, started again with nothing in it.
    await redis.kill();
    await sleep(1000);
    await redis.start();
    const restartedAt = Date.now();
    blockedAt.set(revokedAfter.id, await eventually(() => stack!.revoke(revokedAfter)));
    await sleep(Math.max(0, restartedAt + 8000 - Date.now()));

    // Unreachable for 10 s (every connection reset, new ones refused).
    await redisProxy.stop();
    const cutAt = Date.now();
    // A key change needs the cache: refused while Redis is away, nothing changed.
    await expect(stack.disable(disabledAfter)).rejects.toMatchObject({ type: 'service_unavailable' });
    await sleep(Math.max(0, cutAt + REDIS_OUTAGE_MS - Date.now()));
    await redisProxy.start();
    const restoredAt = Date.now();
    blockedAt.set(disabledAfter.id, await eventually(() => stack!.disable(disabledAfter)));
    await sleep(Math.max(0, restoredAt + 8000 - Date.now()));
    const outcomes = await load.stop();
    const probed = await probes.stop();

    const afterRestart = refusals(outcomes, restartedAt, cutAt);
    const afterOutage = refusals(outcomes, restoredAt, Date.now());
    const duringOutage = refusals(outcomes, cutAt, restoredAt);
    const f = await stack.reconcile([...outcomes, ...probed], restoredAt);
    report(`Redis restarted empty + unreachable ${REDIS_OUTAGE_MS / 1000} s`, f);
    process.stdout.write(
      `[faults]   after the restart: ${afterRestart.refused503}/${afterRestart.sent} × 503, last ${afterRestart.lastRefusalMs} ms after it; ` +
        `during the outage: ${duringOutage.refused503}/${duringOutage.sent} × 503; ` +
        `after it: ${afterOutage.refused503}/${afterOutage.sent} × 503, last ${afterOutage.lastRefusalMs} ms after it; ` +
        `probes of blocked keys: ${probed.length} (${JSON.stringify(countStatuses(probed))})\n`,
    );
    expectReconciled(f, { allowRefused: true });
    // Revoked and disabled keys: never served once blocked, whatever Redis did meanwhile.
    for (const o of probed) {
      const at = blockedAt.get(o.keyId);
      if (at !== undefined && o.startedAt >= at) expect(o.status, `key ${o.keyId}`).toBe(401);
    }
    for (const k of [...stack.blockedKeys, revokedBefore, revokedAfter, disabledAfter])
      expect((await stack.request(k, false)).status).toBe(401);
    // Serving resumes: no 503 for requests sent 5 s after Redis came back (a correctness bound, not a
    // latency target; the printed figures are the measurement).
    for (const o of outcomes)
      if ((o.startedAt > restartedAt + 5000 && o.startedAt < cutAt) || o.startedAt > restoredAt + 5000)
        expect(o.status, `request sent ${o.startedAt - restoredAt} ms after the outage`).not.toBe(503);
    // Outside the outage and the restart, refusals are limits and credits only.
    for (const o of outcomes)
      if (o.status !== 200 && o.status !== 503) expect([402, 403]).toContain(o.status);
  }, 180_000);

  it(`4. Postgres unreachable for billing (${POSTGRES_OUTAGE_MS / 1000} s): the worker waits it out and catches up by itself`, async () => {
    const pgProxy = await createTcpProxy(hostPortOf(testInfra().databaseUrl, 5432));
    proxies.push(pgProxy);
    stack = new FaultStack({ billingDatabaseUrl: (base) => pgProxy.url(base) });
    await stack.start();
    await stack.createKeys(6);
    const load = backgroundLoad(stack);
    await sleep(2000);
    await pgProxy.stop();
    await sleep(POSTGRES_OUTAGE_MS);
    await pgProxy.start();
    const restoredAt = Date.now();
    await sleep(1000);
    const outcomes = await load.stop();
    const f = await stack.reconcile(outcomes, restoredAt);
    report(`Postgres unreachable for billing ${POSTGRES_OUTAGE_MS / 1000} s`, f);
    // Billing's own API is down with its database: a key whose counters need a rebuild may be refused.
    expectReconciled(f, { allowRefused: true });
  }, 180_000);

  it('5b. proxy SIGKILLed with events on its spool: the restart replays them, nothing lost or doubled', async () => {
    const amqpProxy = await createTcpProxy(hostPortOf(testInfra().amqpUrl));
    proxies.push(amqpProxy);
    stack = new FaultStack({ amqpUrl: (base) => amqpProxy.url(base) });
    await stack.start();
    await stack.createKeys(6);
    const load = backgroundLoad(stack);
    await sleep(1500);
    await amqpProxy.stop(); // events pile up (memory, then spool)
    await sleep(4000);
    const spooledBeforeKill = await stack.proxyMetric('tollgate_proxy_publisher_spooled_events');
    await stopService(stack.proxy, 'SIGKILL');
    const killedAt = Date.now();
    const outcomes = await load.stop();
    await amqpProxy.start();
    await stack.startProxy(); // same SPOOL_DIR, same port
    const more = await stack.load({
      concurrency: 2,
      until: (() => {
        const end = Date.now() + 1500;
        return () => Date.now() > end;
      })(),
    });
    const f = await stack.reconcile([...outcomes, ...more], killedAt);
    report(`proxy SIGKILL with a spool (${spooledBeforeKill ?? '?'} spooled at the kill)`, f);
    expectReconciled(f);
  }, 180_000);
});
