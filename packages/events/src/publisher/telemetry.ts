import type { EventsLogger } from '../logger';

/** Change notifications for metrics (counters take the deltas, gauges read `stats`). */
export type PublisherMetric =
  | { type: 'published'; count: number }
  | { type: 'dropped'; count: number }
  | { type: 'connection'; connected: boolean };

const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * The publisher's counters and their reporting: `onMetrics` gets the published/dropped deltas at most
 * once per event-loop turn, and dropped events make one error line per 10 s at most (a broker outage
 * at thousands of requests per second must not become thousands of log lines per second).
 */
export class PublisherTelemetry<S> {
  published = 0;
  dropped = 0;
  unroutable = 0;
  private publishedDelta = 0;
  private droppedDelta = 0;
  private scheduled = false;
  private droppedSinceLog = 0;
  private lastDropLog = 0;

  constructor(
    private readonly log: EventsLogger,
    private readonly stats: () => S,
    private readonly onMetrics?: (metric: PublisherMetric, stats: S) => void,
  ) {}

  /** Calls `onMetrics` now (a callback that throws is logged, never propagated). */
  emit(metric: PublisherMetric): void {
    if (!this.onMetrics) return;
    try {
      this.onMetrics(metric, this.stats());
    } catch (err) {
      this.log.error({ err }, 'usage publisher onMetrics callback threw');
    }
  }

  countPublished(count: number): void {
    if (count === 0) return;
    this.published += count;
    this.publishedDelta += count;
    this.schedule();
  }

  /** Events discarded: counted, reported, and logged (rate-limited) with `reason` and `context`. */
  countDropped(count: number, reason: string, context: Record<string, unknown>, now = Date.now()): void {
    this.dropped += count;
    this.droppedDelta += count;
    this.droppedSinceLog += count;
    this.schedule();
    if (now - this.lastDropLog < DROP_LOG_INTERVAL_MS) return;
    this.log.error(
      { droppedEvents: this.droppedSinceLog, droppedTotal: this.dropped, ...context },
      `usage events dropped: ${reason}`,
    );
    this.lastDropLog = now;
    this.droppedSinceLog = 0;
  }

  /** Reports the pending deltas now. */
  flush(): void {
    this.scheduled = false;
    if (this.publishedDelta > 0) {
      const count = this.publishedDelta;
      this.publishedDelta = 0;
      this.emit({ type: 'published', count });
    }
    if (this.droppedDelta > 0) {
      const count = this.droppedDelta;
      this.droppedDelta = 0;
      this.emit({ type: 'dropped', count });
    }
  }

  private schedule(): void {
    if (this.scheduled || !this.onMetrics) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }
}
