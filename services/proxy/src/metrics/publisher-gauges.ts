import { Counter, Gauge, type Registry } from 'prom-client';

/** What the publisher exposes for the gauges (the @tollgate/events publisher's stats()). */
export interface PublisherStatsSource {
  stats(): {
    buffered: number;
    dropped: number;
    connected: boolean;
    published?: number;
    spooled?: number;
    spoolBytes?: number;
  };
  canAdmit?(): boolean;
}

type Stats = ReturnType<PublisherStatsSource['stats']>;

/**
 * The usage publisher's queue, read at scrape time: what is buffered, spooled, dropped and confirmed,
 * whether it is connected and admitting. Before `watch` every series reads as an idle publisher.
 */
export class PublisherGauges {
  #source: PublisherStatsSource | null = null;

  constructor(registry: Registry) {
    const gauge = (name: string, help: string, read: (s: PublisherStatsSource | null) => number) => {
      const source = () => this.#source;
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(read(source()));
        },
      });
    };
    gauge(
      'tollgate_proxy_publisher_buffered_events',
      'Usage events held in memory, not yet confirmed by RabbitMQ',
      (p) => p?.stats().buffered ?? 0,
    );
    gauge(
      'tollgate_proxy_publisher_connected',
      '1 when the usage publisher has a channel to RabbitMQ',
      (p) => (p?.stats().connected ? 1 : 0),
    );
    gauge(
      'tollgate_proxy_publisher_spooled_events',
      "Usage events on the disk spool (fsync'd), waiting for RabbitMQ",
      (p) => p?.stats().spooled ?? 0,
    );
    gauge(
      'tollgate_proxy_publisher_spool_bytes',
      'Size of the disk spool; alarm well before SPOOL_MAX_BYTES',
      (p) => p?.stats().spoolBytes ?? 0,
    );
    gauge(
      'tollgate_proxy_usage_admitting',
      '0 while billable requests are refused because usage events could be neither sent nor spooled',
      (p) => (p?.canAdmit ? (p.canAdmit() ? 1 : 0) : 1),
    );
    this.#total(
      registry,
      'tollgate_proxy_publisher_dropped_events_total',
      'Usage events dropped because the publisher buffer was full',
      (s) => s.dropped,
    );
    this.#total(
      registry,
      'tollgate_proxy_publisher_confirmed_events_total',
      'Usage events RabbitMQ confirmed (persisted to the queue)',
      (s) => s.published ?? 0,
    );
  }

  watch(source: PublisherStatsSource): void {
    this.#source = source;
  }

  /** A counter whose value is read from the publisher at scrape time (it only grows). */
  #total(registry: Registry, name: string, help: string, read: (s: Stats) => number): void {
    const source = () => this.#source;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const publisher = source();
        const value = publisher ? read(publisher.stats()) : 0;
        this.reset();
        if (value > 0) this.inc(value);
      },
    });
  }
}
