import { describe, expect, it } from 'vitest';
import { recordingLogger } from '../test-support';
import { type PublisherMetric, PublisherTelemetry } from './telemetry';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('PublisherTelemetry', () => {
  it('reports published and dropped deltas once per event-loop turn', async () => {
    const metrics: PublisherMetric[] = [];
    const t = new PublisherTelemetry(
      recordingLogger(),
      () => ({}),
      (m) => metrics.push(m),
    );
    t.countPublished(3);
    t.countPublished(2);
    t.countDropped(1, 'full', {});
    expect(metrics).toEqual([]);
    await turn();
    expect(metrics).toEqual([
      { type: 'published', count: 5 },
      { type: 'dropped', count: 1 },
    ]);
    expect(t).toMatchObject({ published: 5, dropped: 1 });
  });

  it('logs dropped events at most once per 10 s, with the count since the last line', () => {
    const log = recordingLogger();
    const t = new PublisherTelemetry(log, () => ({}));
    t.countDropped(1, 'buffer full', { buffered: 9 }, 100_000);
    t.countDropped(4, 'buffer full', { buffered: 9 }, 105_000);
    expect(log.messages('error')).toEqual(['usage events dropped: buffer full']);
    t.countDropped(2, 'buffer full', { buffered: 9 }, 110_000);
    expect(log.lines.filter((l) => l.level === 'error').map((l) => l.fields.droppedEvents)).toEqual([1, 6]);
  });

  it('a throwing onMetrics callback is logged, never propagated', () => {
    const log = recordingLogger();
    const t = new PublisherTelemetry(
      log,
      () => ({}),
      () => {
        throw new Error('boom');
      },
    );
    expect(() => t.emit({ type: 'connection', connected: true })).not.toThrow();
    expect(log.messages('error')).toEqual(['usage publisher onMetrics callback threw']);
  });
});
