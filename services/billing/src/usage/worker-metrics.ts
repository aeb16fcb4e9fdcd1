import type { UsageConsumer, UsageEvent } from '@tollgate/events';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PartitionConsumer } from './partition-consumers';

export interface WorkerMetrics {
  /**
   * The consumer whose stats the gauges read (null: WORKER_ENABLED=false), and the consumer of each
   * partition the worker takes (the `{partition}` gauges).
   */
  watch(consumer: UsageConsumer | null, partitions?: readonly PartitionConsumer[]): void;
  /** A batch of usage events was committed: counts them and observes each one's age. */
  committed(events: readonly UsageEvent[]): void;
}

/**
 * The usage worker's health for operators (billing's metrics listener): lag is the age of the oldest
 * event the worker is holding (retrying while a dependency is down), so an alert on it catches a stuck
 * worker long before anyone misses a generation record; the lag histogram is each event's age when its
 * batch committed (request end → billed).
 */
export function workerMetrics(registry: Registry): WorkerMetrics {
  let consumer: UsageConsumer | null = null;
  let partitions: readonly PartitionConsumer[] = [];
  partitionGauges(registry, () => partitions);
  const stat = (name: string, help: string, read: (s: ReturnType<UsageConsumer['stats']>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(consumer ? read(consumer.stats()) : 0);
      },
    });
  stat(
    'tollgate_billing_lag_seconds',
    'Age of the oldest usage event the worker holds (0 when idle)',
    (s) => s.lagMs / 1000,
  );
  stat('tollgate_billing_events_handled', 'Usage events recorded and acked since start', (s) => s.handled);
  stat(
    'tollgate_billing_events_dead_lettered',
    'Usage events sent to the dead-letter queue since start',
    (s) => s.deadLettered,
  );
  stat(
    'tollgate_billing_transient_retries',
    'In-process retries after a dependency failure since start',
    (s) => s.transientRetries,
  );
  stat('tollgate_billing_consuming', '1 while the worker is connected to RabbitMQ and consuming', (s) =>
    s.connected ? 1 : 0,
  );
  const committed = new Counter({
    name: 'tollgate_billing_events_committed_total',
    help: 'Usage events committed to Postgres (generation records and spend), redeliveries included',
    registers: [registry],
  });
  const age = new Histogram({
    name: 'tollgate_billing_event_lag_at_commit_seconds',
    help: 'Age of each usage event when its batch committed (request end → generation visible)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers: [registry],
  });
  return {
    watch(c, p = []) {
      consumer = c;
      partitions = p;
    },
    committed(events) {
      const now = Date.now();
      committed.inc(events.length);
      for (const e of events) {
        const finished = Date.parse(e.finished_at);
        if (Number.isFinite(finished)) age.observe(Math.max(0, now - finished) / 1000);
      }
    },
  };
}

/**
 * Per usage partition this worker takes: its backlog (messages ready in its queue, from the broker)
 * and its consumer's lag (age of the oldest event it holds) and state. A partition whose active
 * consumer is another worker shows its backlog here too, and lag 0 (this worker is its standby).
 */
function partitionGauges(registry: Registry, read: () => readonly PartitionConsumer[]): void {
  new Gauge({
    name: 'tollgate_billing_partition_backlog_messages',
    help: 'Messages ready in a usage partition queue, not yet delivered (from the broker)',
    labelNames: ['partition'],
    registers: [registry],
    async collect() {
      this.reset();
      const all = read();
      const backlogs = await Promise.all(all.map((p) => p.consumer.backlog()));
      all.forEach((p, i) => {
        const n = backlogs[i];
        if (n !== null && n !== undefined) this.set({ partition: String(p.partition) }, n);
      });
    },
  });
  new Gauge({
    name: 'tollgate_billing_partition_lag_seconds',
    help: "Age of the oldest usage event a partition's consumer holds in this worker (0 when idle)",
    labelNames: ['partition'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of read()) this.set({ partition: String(p.partition) }, p.consumer.stats().lagMs / 1000);
    },
  });
  new Gauge({
    name: 'tollgate_billing_partition_consuming',
    help: '1 while the consumer of a usage partition is connected and subscribed (active or standby)',
    labelNames: ['partition'],
    registers: [registry],
    collect() {
      this.reset();
      for (const p of read())
        this.set({ partition: String(p.partition) }, p.consumer.stats().connected ? 1 : 0);
    },
  });
}
