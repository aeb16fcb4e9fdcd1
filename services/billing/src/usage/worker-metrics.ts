import type { UsageConsumer, UsageEvent } from '@tollgate/events';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface WorkerMetrics {
  /** The consumer whose stats the gauges read (null: WORKER_ENABLED=false). */
  watch(consumer: UsageConsumer | null): void;
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
    watch(c) {
      consumer = c;
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
