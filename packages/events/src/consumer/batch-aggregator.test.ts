import type { Channel, ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sampleEvent } from '../test-support';
import { type Batch, BatchAggregator } from './batch-aggregator';

// Only identity matters here: the aggregator never calls the channel nor reads the delivery.
const channel = {} as Channel;
const delivery = (n: number) => ({ n }) as unknown as ConsumeMessage;

describe('BatchAggregator', () => {
  afterEach(() => vi.useRealTimers());

  it('seals at batchSize without splitting a message, acking up to its last ackable delivery', () => {
    const sealed: Batch[] = [];
    const agg = new BatchAggregator(3, 1_000, (b) => sealed.push(b));
    const [m1, m2, m3] = [delivery(1), delivery(2), delivery(3)];
    agg.add(channel, m1, [sampleEvent(), sampleEvent()], true);
    agg.add(channel, m2, [sampleEvent()], false); // dead-lettered at receipt: its valid event still goes
    expect(sealed).toHaveLength(1);
    expect(sealed[0]?.messages).toEqual([m1, m1, m2]);
    expect(sealed[0]?.last).toBe(m1);
    agg.add(channel, m3, [sampleEvent(), sampleEvent(), sampleEvent(), sampleEvent()], true);
    expect(sealed[1]?.events).toHaveLength(4); // one message's events are never split
    expect(agg.filling).toBe(false);
  });

  it('seals an incomplete batch timeoutMs after its first event; drop() forgets it', async () => {
    vi.useFakeTimers();
    const sealed: Batch[] = [];
    const agg = new BatchAggregator(100, 50, (b) => sealed.push(b));
    agg.add(channel, delivery(1), [sampleEvent()], true);
    await vi.advanceTimersByTimeAsync(30);
    agg.add(channel, delivery(2), [sampleEvent()], true);
    await vi.advanceTimersByTimeAsync(20);
    expect(sealed.map((b) => b.events.length)).toEqual([2]);
    agg.add(channel, delivery(3), [sampleEvent()], true);
    agg.drop();
    await vi.advanceTimersByTimeAsync(100);
    expect(sealed).toHaveLength(1);
  });
});
