import type { UsageConsumer } from '@tollgate/events';
import { Gauge, Registry } from 'prom-client';

/**
 * The usage worker's health for operators (billing's GET /metrics): lag is the age of the oldest event
 * the worker is holding (retrying while a dependency is down), so an alert on it catches a stuck
 * worker long before anyone misses a generation record.
 */
export function workerMetrics(consumer: UsageConsumer | null): Registry {
  const registry = new Registry();
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
  return registry;
}
