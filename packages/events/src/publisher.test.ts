import { Socket } from 'node:net';
import { createLogger } from '@tollgate/logger';
import { createTcpProxy, createTestAmqp, hostPortOf, type TcpProxy, type TestAmqp } from '@tollgate/testkit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { usagePartition } from './partition';
import { createUsagePublisher, type PublisherMetric, type UsagePublisher } from './publisher';
import {
  accountsCoveringPartitions,
  drainEvents,
  drainQueue,
  recordingLogger,
  sampleEvent,
} from './test-support';
import { topologyNames, type UsageTopology, usageTopology } from './topology';
import { parseUsageEvent, USAGE_BATCH_MESSAGE_TYPE, usageMessageBodies } from './usage-event';

const original = {
  write: Socket.prototype._write,
  writev: Socket.prototype._writev as NonNullable<Socket['_writev']>,
};

let amqp: TestAmqp;
let topology: UsageTopology;
let proxy: TcpProxy | null;
const publishers: UsagePublisher[] = [];

beforeEach(() => {
  amqp = createTestAmqp();
  topology = usageTopology(amqp.prefix);
  proxy = null;
});

afterEach(async () => {
  for (const p of publishers.splice(0)) await p.close({ drainTimeoutMs: 0 });
  await proxy?.close();
  await amqp.cleanup(topologyNames(topology));
});

function start(
  options: {
    url?: string;
    maxBuffered?: number;
    onMetrics?: (m: PublisherMetric) => void;
    eventsPerMessage?: number;
    lingerMs?: number;
  } = {},
) {
  const logger = recordingLogger();
  const publisher = createUsagePublisher({
    url: options.url ?? amqp.url,
    topology,
    logger,
    maxBuffered: options.maxBuffered,
    reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
    onMetrics: options.onMetrics,
    eventsPerMessage: options.eventsPerMessage,
    lingerMs: options.lingerMs,
  });
  publishers.push(publisher);
  return { publisher, logger };
}

async function throughProxy() {
  proxy = await createTcpProxy(hostPortOf(amqp.url));
  return proxy.url(amqp.url);
}

describe('usage publisher', () => {
  it('publishes persistent, confirmed JSON messages carrying the event id and type', async () => {
    const { publisher } = start({ eventsPerMessage: 1 });
    const events = [sampleEvent(), sampleEvent(), sampleEvent()];
    for (const e of events) publisher.publish(e);

    expect(await publisher.flush(10_000)).toBe(true);
    expect(publisher.stats()).toMatchObject({ buffered: 0, published: 3, dropped: 0, connected: true });

    const messages = await drainQueue(amqp.url, topology.queue);
    expect(messages).toHaveLength(3);
    for (const [i, msg] of messages.entries()) {
      expect(msg.properties).toMatchObject({
        deliveryMode: 2,
        contentType: 'application/json',
        messageId: events[i]?.id,
        type: 'usage.v1',
      });
      expect(parseUsageEvent(msg.content)).toEqual({ ok: true, event: events[i] });
    }
  });

  it('packs the events at hand into usage.batch.v1 messages (NDJSON), at most eventsPerMessage each, one confirm per message', async () => {
    const { publisher } = start({ eventsPerMessage: 40, lingerMs: 20 });
    const events = Array.from({ length: 100 }, () => sampleEvent());
    for (const e of events) publisher.publish(e);
    expect(await publisher.flush(10_000)).toBe(true);
    expect(publisher.stats()).toMatchObject({ buffered: 0, published: 100, dropped: 0 });

    const messages = await drainQueue(amqp.url, topology.queue);
    expect(messages.map((m) => m.content.toString().split('\n').length)).toEqual([40, 40, 20]);
    for (const msg of messages)
      expect(msg.properties).toMatchObject({
        deliveryMode: 2,
        contentType: 'application/x-ndjson',
        type: USAGE_BATCH_MESSAGE_TYPE,
      });
    const lines = messages.flatMap((m) => usageMessageBodies(m.content, m.properties.type));
    expect(lines.map((l) => parseUsageEvent(l))).toEqual(events.map((event) => ({ ok: true, event })));
  });

  it('lingers at most lingerMs for company: a lone event is sent as a plain usage.v1 message', async () => {
    const { publisher } = start({ lingerMs: 30 });
    const event = sampleEvent();
    const started = performance.now();
    publisher.publish(event);
    expect(await publisher.flush(10_000)).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    const messages = await drainQueue(amqp.url, topology.queue);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.properties).toMatchObject({ type: 'usage.v1', messageId: event.id });
  });

  it('sends a message of several frames (2 KB and more) in one socket write', async () => {
    const { publisher } = start({ lingerMs: 5 });
    publisher.publish(sampleEvent());
    expect(await publisher.flush(10_000)).toBe(true); // connected, channel open
    const brokerPort = hostPortOf(amqp.url).port;
    const writes: string[] = [];
    const toBroker = (s: Socket) => s.remotePort === brokerPort;
    const single = vi.spyOn(Socket.prototype, '_write');
    const many = vi.spyOn(Socket.prototype, '_writev');
    single.mockImplementation(function (this: Socket, ...args) {
      if (toBroker(this)) writes.push('write');
      return original.write.call(this, ...args);
    });
    many.mockImplementation(function (this: Socket, ...args) {
      if (toBroker(this)) writes.push(`writev ${args[0].length}`);
      return original.writev.call(this, ...args);
    });
    try {
      const events = Array.from({ length: 10 }, () => sampleEvent());
      expect(events.reduce((n, e) => n + JSON.stringify(e).length, 0)).toBeGreaterThan(2048);
      for (const e of events) publisher.publish(e);
      expect(await publisher.flush(10_000)).toBe(true);
    } finally {
      single.mockRestore();
      many.mockRestore();
    }
    // amqplib hands the socket the method + header frame and the body frame apart: one writev.
    expect(writes).toEqual(['writev 2']);
    const messages = await drainQueue(amqp.url, topology.queue);
    expect(messages.flatMap((m) => usageMessageBodies(m.content, m.properties.type))).toHaveLength(11);
  });

  it('accepts a pino logger from @tollgate/logger', async () => {
    const publisher = createUsagePublisher({
      url: amqp.url,
      topology,
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    publishers.push(publisher);
    publisher.publish(sampleEvent());
    expect(await publisher.flush(10_000)).toBe(true);
  });

  it('delivers events in publish order', async () => {
    const { publisher } = start();
    const ids: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const e = sampleEvent();
      ids.push(e.id);
      publisher.publish(e);
    }
    expect(await publisher.flush(20_000)).toBe(true);
    const messages = await drainEvents(amqp.url, topology.queue);
    expect(messages.map((m) => m.properties.messageId)).toEqual(ids);
  });

  it('buffers events while RabbitMQ is unreachable and delivers each exactly once when it returns', async () => {
    const url = await throughProxy();
    const { publisher, logger } = start({ url });
    const before = [sampleEvent(), sampleEvent()];
    for (const e of before) publisher.publish(e);
    expect(await publisher.flush(10_000)).toBe(true);

    await proxy?.stop();
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(false), { timeout: 5000 });
    const during = Array.from({ length: 500 }, () => sampleEvent());
    for (const e of during) publisher.publish(e);
    expect(publisher.stats()).toMatchObject({ buffered: 500, published: 2, connected: false });
    expect(logger.messages('warn').filter((m) => m.startsWith('RabbitMQ connection lost'))).toHaveLength(1);

    await proxy?.start();
    await vi.waitFor(() => expect(publisher.stats()).toMatchObject({ buffered: 0, published: 502 }), {
      timeout: 10_000,
    });
    const restored = logger.lines.filter((l) => l.msg.startsWith('RabbitMQ connection restored'));
    expect(restored).toHaveLength(1);
    expect(restored[0]?.fields.buffered).toBe(500);

    const ids = (await drainEvents(amqp.url, topology.queue)).map((m) => m.properties.messageId);
    expect(ids).toEqual([...before, ...during].map((e) => e.id));
  });

  it('resends events that were in flight when the connection dropped (none lost)', async () => {
    const url = await throughProxy();
    const { publisher } = start({ url });
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(true), { timeout: 5000 });
    const events = Array.from({ length: 20_000 }, () => sampleEvent());
    for (const e of events) publisher.publish(e);
    // Cut the connection while the confirm window is full.
    await vi.waitFor(() => expect(publisher.stats().published).toBeGreaterThan(0), { timeout: 5000 });
    await proxy?.stop();
    await proxy?.start();

    expect(await publisher.flush(20_000)).toBe(true);
    const ids = new Set((await drainEvents(amqp.url, topology.queue)).map((m) => m.properties.messageId));
    expect(ids.size).toBe(events.length);
    for (const e of events) expect(ids.has(e.id)).toBe(true);
  });

  it('starts without a broker and publishes what it buffered once the broker is reachable', async () => {
    const url = await throughProxy();
    await proxy?.stop();
    const { publisher, logger } = start({ url });
    publisher.publish(sampleEvent());
    await vi.waitFor(() =>
      expect(logger.messages('warn')).toContain(
        'RabbitMQ unreachable at startup; buffering usage events and retrying',
      ),
    );
    await proxy?.start();
    expect(await publisher.flush(10_000)).toBe(true);
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(1);
  });

  it('drops the oldest events when the buffer is full, counting them and logging an error', async () => {
    const url = await throughProxy();
    const metrics: PublisherMetric[] = [];
    const { publisher, logger } = start({ url, maxBuffered: 10, onMetrics: (m) => metrics.push(m) });
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(true), { timeout: 5000 });
    await proxy?.stop();
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(false), { timeout: 5000 });

    const events = Array.from({ length: 25 }, () => sampleEvent());
    for (const e of events) publisher.publish(e);
    expect(publisher.stats()).toMatchObject({ buffered: 10, dropped: 15 });
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1); // rate limited, not one line per event
    expect(errors[0]?.msg).toMatch(/usage events dropped: buffer full/);
    await vi.waitFor(() =>
      expect(
        metrics
          .filter((m) => m.type === 'dropped')
          .reduce((n, m) => n + (m.type === 'dropped' ? m.count : 0), 0),
      ).toBe(15),
    );

    await proxy?.start();
    expect(await publisher.flush(10_000)).toBe(true);
    const ids = (await drainEvents(amqp.url, topology.queue)).map((m) => m.properties.messageId);
    expect(ids).toEqual(events.slice(15).map((e) => e.id));
    await vi.waitFor(() =>
      expect(
        metrics
          .filter((m) => m.type === 'published')
          .reduce((n, m) => n + (m.type === 'published' ? m.count : 0), 0),
      ).toBe(10),
    );
    expect(metrics.filter((m) => m.type === 'connection')).toEqual([
      { type: 'connection', connected: true },
      { type: 'connection', connected: false },
      { type: 'connection', connected: true },
    ]);
  });

  it('close() flushes everything buffered before closing', async () => {
    const { publisher } = start();
    for (let i = 0; i < 1000; i++) publisher.publish(sampleEvent());
    expect(await publisher.close({ drainTimeoutMs: 10_000 })).toEqual({ drained: true, remaining: 0 });
    expect(publisher.stats()).toMatchObject({ published: 1000, buffered: 0, connected: false });
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(1000);
  });

  it('close() during an outage keeps retrying until the broker is back', async () => {
    const url = await throughProxy();
    const { publisher } = start({ url });
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(true), { timeout: 5000 });
    await proxy?.stop();
    for (let i = 0; i < 5; i++) publisher.publish(sampleEvent());
    const closing = publisher.close({ drainTimeoutMs: 15_000 });
    await proxy?.start();
    expect(await closing).toEqual({ drained: true, remaining: 0 });
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(5);
  });

  it('close() gives up after drainTimeoutMs and reports what was not delivered', async () => {
    const url = await throughProxy();
    const { publisher, logger } = start({ url });
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(true), { timeout: 5000 });
    await proxy?.stop();
    for (let i = 0; i < 5; i++) publisher.publish(sampleEvent());
    expect(await publisher.close({ drainTimeoutMs: 200 })).toEqual({ drained: false, remaining: 5 });
    expect(logger.messages('error').some((m) => m.includes('closed with 5 unconfirmed usage events'))).toBe(
      true,
    );
  });

  it('counts events published after close() as dropped', async () => {
    const { publisher } = start();
    await publisher.close();
    publisher.publish(sampleEvent());
    expect(publisher.stats()).toMatchObject({ dropped: 1, buffered: 0 });
  });
});

describe('usage publisher with USAGE_PARTITIONS=2', () => {
  it("routes each event to its account's partition queue, every account's events in publish order", async () => {
    const partitioned = usageTopology(amqp.prefix, 2);
    const publisher = createUsagePublisher({
      url: amqp.url,
      topology: partitioned,
      logger: recordingLogger(),
      reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
    });
    publishers.push(publisher);
    try {
      const accounts = accountsCoveringPartitions(8, 2);
      const events = Array.from({ length: 200 }, (_, i) => sampleEvent({ account_id: accounts[i % 8] }));
      for (const e of events) publisher.publish(e);
      expect(await publisher.flush(10_000)).toBe(true);
      expect(publisher.stats().unroutable).toBe(0);
      for (const [i, partition] of partitioned.partitions.entries()) {
        const got = (await drainEvents(amqp.url, partition.queue)).map(
          (d) => JSON.parse(d.content.toString()) as { id: string; account_id: string },
        );
        const expected = events.filter((e) => usagePartition(e.account_id, 2) === i);
        expect(expected.length).toBeGreaterThan(0);
        // Everything of the partition, nothing else, in publish order (so each account's in order).
        expect(got.map((e) => e.id)).toEqual(expected.map((e) => e.id));
      }
    } finally {
      await publisher.close({ drainTimeoutMs: 0 });
      await amqp.cleanup(topologyNames(partitioned));
    }
  });
});
