/**
 * The fault suite (issue 13): the real stack as processes, under generated load (streamed and not,
 * several keys, some at their limit), through process and server failures. Every scenario ends with
 * the reconciliation of `FaultStack.reconcile` and prints its figures. Shared servers are never
 * stopped: outages are made with TCP fault proxies (`createTcpProxy`) in front of them.
 * Runs with `make test-faults` (CI calls it), not in `make test`.
 */
import { createTcpProxy, hostPortOf, type TcpProxy, testInfra } from '@tollgate/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultStack, type Figures, type Outcome, report, sleep, stopService } from './harness';

const RABBIT_OUTAGE_MS = Number(process.env.FAULTS_RABBIT_OUTAGE_MS ?? 30_000);
const POSTGRES_OUTAGE_MS = Number(process.env.FAULTS_POSTGRES_OUTAGE_MS ?? 30_000);

let stack: FaultStack | null = null;
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await stack?.close();
  stack = null;
  for (const p of proxies.splice(0)) await p.close();
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
