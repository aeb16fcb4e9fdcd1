/**
 * Publisher throughput against a real broker: how many usage events per second get CONFIRMED
 * (persisted to billing's quorum queue), and what `publish()` costs the caller.
 *
 *   cd packages/events && pnpm exec tsx bench/publisher.ts
 *   env: AMQP_URL (default amqp://guest:guest@127.0.0.1:5672), EVENTS (200000), MAX_IN_FLIGHT (10000)
 *
 * Uses its own `bench.<random>` exchange and queues and deletes them at the end.
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { createUsagePublisher } from '../src/publisher';
import { sampleEvent } from '../src/test-support';
import { topologyNames, usageTopology } from '../src/topology';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const total = Number(process.env.EVENTS ?? 200_000);
const maxInFlight = Number(process.env.MAX_IN_FLIGHT ?? 10_000);
const topology = usageTopology(`bench.${randomBytes(4).toString('hex')}`);
const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const publisher = createUsagePublisher({ url, topology, logger: silent, maxBuffered: total, maxInFlight });
const events = Array.from({ length: total }, () => sampleEvent());
const bytes = Buffer.byteLength(JSON.stringify(events[0]));

try {
  // Warm up: connect, declare, JIT.
  for (let i = 0; i < 1000; i++) publisher.publish(sampleEvent());
  if (!(await publisher.flush(30_000))) throw new Error('warm-up did not confirm: is RabbitMQ running?');
  const base = publisher.stats().published;

  // 1. Burst: everything at once (a backlog after an outage), then wait for the confirms.
  let t0 = process.hrtime.bigint();
  for (const e of events) publisher.publish(e);
  const publishNs = Number(process.hrtime.bigint() - t0);
  if (!(await publisher.flush(300_000))) throw new Error('burst not confirmed within 5 min');
  const burstS = Number(process.hrtime.bigint() - t0) / 1e9;
  const confirmed = publisher.stats().published - base;

  // 2. Steady: 1000-event slices every millisecond-ish, like a busy proxy's event loop.
  const steady = Math.min(total, 100_000);
  const base2 = publisher.stats().published;
  t0 = process.hrtime.bigint();
  for (let i = 0; i < steady; i += 1000) {
    for (let j = i; j < Math.min(steady, i + 1000); j++) publisher.publish(sampleEvent());
    await new Promise((r) => setImmediate(r));
  }
  if (!(await publisher.flush(300_000))) throw new Error('steady run not confirmed within 5 min');
  const steadyS = Number(process.hrtime.bigint() - t0) / 1e9;

  console.log(
    JSON.stringify(
      {
        broker: url.replace(/\/\/[^@]*@/, '//'),
        eventBytes: bytes,
        maxInFlight,
        burst: {
          events: confirmed,
          seconds: +burstS.toFixed(2),
          confirmedPerSecond: Math.round(confirmed / burstS),
          publishCallMicros: +(publishNs / total / 1000).toFixed(2),
        },
        steady: {
          events: publisher.stats().published - base2,
          seconds: +steadyS.toFixed(2),
          confirmedPerSecond: Math.round((publisher.stats().published - base2) / steadyS),
        },
        stats: publisher.stats(),
      },
      null,
      2,
    ),
  );
} finally {
  await publisher.close({ drainTimeoutMs: 1000 });
  const conn = await amqplib.connect(url);
  const ch = await conn.createChannel();
  const names = topologyNames(topology);
  for (const q of names.queues) await ch.deleteQueue(q).catch(() => {});
  for (const e of names.exchanges) await ch.deleteExchange(e).catch(() => {});
  await conn.close();
}
