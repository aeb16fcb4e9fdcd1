import { createTcpProxy, createTestAmqp, hostPortOf, type TcpProxy, type TestAmqp } from '@tollgate/testkit';
import amqplib from 'amqplib';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createUsageConsumer, type UsageConsumer, type UsageConsumerOptions } from './consumer';
import { usagePartition } from './partition';
import { createUsagePublisher, type UsagePublisher } from './publisher';
import {
  accountsCoveringPartitions,
  drainEvents,
  drainQueue,
  queueDepth,
  recordingLogger,
  sampleEvent,
} from './test-support';
import { declareUsageTopology, topologyNames, type UsageTopology, usageTopology } from './topology';
import { USAGE_BATCH_MESSAGE_TYPE, type UsageEvent } from './usage-event';

let amqp: TestAmqp;
let topology: UsageTopology;
let proxy: TcpProxy | null;
let publisher: UsagePublisher;
const consumers: UsageConsumer[] = [];

beforeEach(() => {
  amqp = createTestAmqp();
  topology = usageTopology(amqp.prefix);
  proxy = null;
  publisher = createUsagePublisher({ url: amqp.url, topology, logger: recordingLogger() });
});

afterEach(async () => {
  for (const c of consumers.splice(0)) await c.close();
  await publisher.close({ drainTimeoutMs: 1000 });
  await proxy?.close();
  await amqp.cleanup(topologyNames(topology));
});

type Handle = UsageConsumerOptions['handle'];

function consume(handle: Handle, options: Partial<UsageConsumerOptions> = {}) {
  const logger = recordingLogger();
  const consumer = createUsageConsumer({
    url: amqp.url,
    topology,
    logger,
    prefetch: 20,
    batchSize: 10,
    batchTimeoutMs: 30,
    retryBackoff: { initialDelayMs: 20, maxDelayMs: 100 },
    reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
    handle,
    ...options,
  });
  consumers.push(consumer);
  return { consumer, logger };
}

async function publishEvents(n: number, via = publisher): Promise<UsageEvent[]> {
  const events = Array.from({ length: n }, () => sampleEvent());
  for (const e of events) via.publish(e);
  expect(await via.flush(10_000)).toBe(true);
  return events;
}

/** A publisher sending one `usage.v1` message per event (what proxies before batch messages sent). */
async function publishSingles(n: number): Promise<UsageEvent[]> {
  const singles = createUsagePublisher({
    url: amqp.url,
    topology,
    logger: recordingLogger(),
    eventsPerMessage: 1,
  });
  try {
    return await publishEvents(n, singles);
  } finally {
    await singles.close({ drainTimeoutMs: 1000 });
  }
}

/** Publishes raw `usage.batch.v1` messages, each from its lines (what a buggy producer could send). */
async function publishRawBatches(messages: string[][]) {
  const conn = await amqplib.connect(amqp.url);
  try {
    const ch = await conn.createConfirmChannel();
    await declareUsageTopology(ch, topology);
    for (const lines of messages)
      ch.publish(topology.exchange, topology.routingKey, Buffer.from(lines.join('\n')), {
        persistent: true,
        type: USAGE_BATCH_MESSAGE_TYPE,
      });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
}

/** Publishes a raw body straight to the exchange (what a buggy or foreign producer could send). */
async function publishRaw(bodies: string[]) {
  const conn = await amqplib.connect(amqp.url);
  try {
    const ch = await conn.createConfirmChannel();
    await declareUsageTopology(ch, topology);
    for (const body of bodies)
      ch.publish(topology.exchange, topology.routingKey, Buffer.from(body), { persistent: true });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
}

describe('usage consumer', () => {
  it('hands valid events to handle in batches of at most batchSize and acks them after handle resolves', async () => {
    const batches: UsageEvent[][] = [];
    const { consumer } = consume(async (batch) => {
      batches.push(batch);
    });
    await consumer.ready();
    const events = await publishSingles(35);

    await vi.waitFor(() => expect(batches.flat()).toHaveLength(35), { timeout: 10_000 });
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(10);
    expect(batches.length).toBeGreaterThanOrEqual(4);
    expect(batches.flat().map((e) => e.id)).toEqual(events.map((e) => e.id));
    await vi.waitFor(() => expect(consumer.stats().handled).toBe(35));

    await consumer.close();
    expect(await queueDepth(amqp.url, topology.queue)).toBe(0); // acked, nothing comes back
  });

  it('hands over an incomplete batch once batchTimeoutMs has passed', async () => {
    const batches: UsageEvent[][] = [];
    const { consumer } = consume(async (batch) => void batches.push(batch), {
      batchSize: 100,
      prefetch: 200,
    });
    await consumer.ready();
    await publishEvents(3);
    await vi.waitFor(() => expect(batches).toHaveLength(1));
    expect(batches[0]).toHaveLength(3);
  });

  it('does not ack a batch before handle resolves: a lost connection redelivers it', async () => {
    proxy = await createTcpProxy(hostPortOf(amqp.url));
    const seen: string[][] = [];
    let release: () => void = () => {};
    const first = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { consumer } = consume(
      async (batch) => {
        seen.push(batch.map((e) => e.id));
        if (seen.length === 1) await first; // hold the first batch while the connection dies
      },
      { url: proxy.url(amqp.url) },
    );
    await consumer.ready();
    const events = await publishEvents(5);
    await vi.waitFor(() => expect(seen).toHaveLength(1));

    await proxy.stop();
    await vi.waitFor(() => expect(consumer.stats().connected).toBe(false));
    await proxy.start();
    release();

    await vi.waitFor(() => expect(consumer.stats()).toMatchObject({ connected: true, handled: 5 }), {
      timeout: 10_000,
    });
    // The held batch was not acked: every event of it came again after the reconnect.
    const again = new Set(seen.slice(1).flat());
    for (const id of seen[0] ?? []) expect(again.has(id)).toBe(true);
    expect([...again].sort()).toEqual(events.map((e) => e.id).sort());
    await consumer.close();
    expect(await queueDepth(amqp.url, topology.queue)).toBe(0);
  });

  it('retries a batch that failed transiently in-process, never requeueing or dead-lettering it', async () => {
    const calls: string[][] = [];
    const { consumer, logger } = consume(
      async (batch) => {
        calls.push(batch.map((e) => e.id));
        if (calls.length <= 5) throw new Error('database unavailable');
      },
      { classify: () => 'transient' },
    );
    await consumer.ready();
    const events = await publishEvents(4);

    await vi.waitFor(() => expect(consumer.stats().handled).toBe(4), { timeout: 10_000 });
    // Six attempts of the same batch, in order, handed over whole each time.
    expect(calls).toEqual(Array.from({ length: 6 }, () => events.map((e) => e.id)));
    expect(consumer.stats()).toMatchObject({
      failedBatches: 5,
      transientRetries: 5,
      deadLettered: 0,
      lagMs: 0,
    });
    expect(logger.messages('error')).toContain(
      'usage batch failed (transient); retrying in-process after a backoff',
    );
    expect(await queueDepth(amqp.url, topology.deadLetterQueue)).toBe(0);
  });

  it('reports the lag of a batch waiting for a dependency', async () => {
    let down = true;
    const { consumer } = consume(
      async () => {
        if (down) throw new Error('database unavailable');
      },
      { classify: () => 'transient' },
    );
    await consumer.ready();
    await publishEvents(1);
    await vi.waitFor(() => expect(consumer.stats().transientRetries).toBeGreaterThan(1), { timeout: 5000 });
    expect(consumer.stats().lagMs).toBeGreaterThan(0);
    down = false;
    await vi.waitFor(() => expect(consumer.stats().handled).toBe(1), { timeout: 5000 });
    expect(consumer.stats().lagMs).toBe(0);
  });

  it('isolates a poison event: the batch is split, the others are handled, only it is dead-lettered', async () => {
    const handledIds: string[] = [];
    let poison = '';
    const { consumer } = consume(async (batch) => {
      if (batch.some((e) => e.id === poison)) throw new Error('invalid input syntax for type json');
      handledIds.push(...batch.map((e) => e.id));
    });
    await consumer.ready();
    const events = Array.from({ length: 5 }, () => sampleEvent());
    poison = events[2]!.id;
    await publishRaw(events.map((e) => JSON.stringify(e)));

    await vi.waitFor(() => expect(consumer.stats().deadLettered).toBe(1), { timeout: 10_000 });
    await vi.waitFor(() => expect(consumer.stats().handled).toBe(4));
    expect(handledIds.sort()).toEqual(
      events
        .filter((e) => e.id !== poison)
        .map((e) => e.id)
        .sort(),
    );
    const dead = await vi.waitFor(
      async () => {
        const messages = await drainQueue(amqp.url, topology.deadLetterQueue);
        expect(messages).toHaveLength(1);
        return messages;
      },
      { timeout: 5000 },
    );
    expect(JSON.parse(dead[0]!.content.toString()).id).toBe(poison);
    expect(await queueDepth(amqp.url, topology.queue)).toBe(0);
  });

  it('dead-letters undecodable and schema-invalid messages, logging the reason, and keeps consuming', async () => {
    const handled: UsageEvent[] = [];
    const { consumer, logger } = consume(async (batch) => void handled.push(...batch));
    await consumer.ready();
    const valid = sampleEvent();
    await publishRaw(['{not json', JSON.stringify({ ...sampleEvent(), cost: -1 }), JSON.stringify(valid)]);

    await vi.waitFor(() => expect(handled.map((e) => e.id)).toEqual([valid.id]));
    await vi.waitFor(() => expect(consumer.stats().deadLettered).toBe(2));
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors.map((l) => l.fields.reason)).toEqual([
      'body is not JSON',
      expect.stringMatching(/^cost: /),
    ]);

    const dead = await vi.waitFor(
      async () => {
        const messages = await drainQueue(amqp.url, topology.deadLetterQueue);
        expect(messages).toHaveLength(2);
        return messages;
      },
      { timeout: 5000 },
    );
    expect(dead[0]?.content.toString()).toBe('{not json');
    expect(dead[1]?.properties.headers?.['x-death']?.[0]).toMatchObject({
      reason: 'rejected',
      queue: topology.queue,
    });
  });

  it('reads batch messages (usage.batch.v1): every event once, in order, the message acked after its last event', async () => {
    const batches: UsageEvent[][] = [];
    const { consumer } = consume(async (batch) => void batches.push(batch), { batchSize: 10, prefetch: 20 });
    await consumer.ready();
    const events = await publishEvents(250); // the publisher packs them, up to 100 per message
    await vi.waitFor(() => expect(consumer.stats().handled).toBe(250), { timeout: 10_000 });
    expect(batches.flat().map((e) => e.id)).toEqual(events.map((e) => e.id));
    // A message is never split across batches: a batch is at most batchSize + one message's events.
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(10 + 99);
    expect(publisher.stats().published).toBe(250);
    await vi.waitFor(async () => expect(await queueDepth(amqp.url, topology.queue)).toBe(0));
    expect(consumer.stats().deadLettered).toBe(0);
  });

  it('a batch message with a poison event: the others are handled, the message is dead-lettered whole', async () => {
    const handledIds: string[] = [];
    let poison = '';
    const { consumer } = consume(async (batch) => {
      if (batch.some((e) => e.id === poison)) throw new Error('invalid input syntax for type json');
      handledIds.push(...batch.map((e) => e.id));
    });
    await consumer.ready();
    const events = Array.from({ length: 5 }, () => sampleEvent());
    const clean = Array.from({ length: 3 }, () => sampleEvent());
    poison = events[2]!.id;
    await publishRawBatches([events.map((e) => JSON.stringify(e)), clean.map((e) => JSON.stringify(e))]);

    await vi.waitFor(() => expect(consumer.stats().handled).toBe(7), { timeout: 10_000 });
    expect(consumer.stats().deadLettered).toBe(1);
    expect(handledIds.sort()).toEqual(
      [...events, ...clean]
        .filter((e) => e.id !== poison)
        .map((e) => e.id)
        .sort(),
    );
    const dead = await vi.waitFor(
      async () => {
        const messages = await drainEvents(amqp.url, topology.deadLetterQueue);
        expect(messages).toHaveLength(5);
        return messages;
      },
      { timeout: 5000 },
    );
    // The whole message (its handled events too: billing dedupes them on a replay).
    expect(dead.map((d) => d.properties.messageId)).toEqual(events.map((e) => e.id));
    await vi.waitFor(async () => expect(await queueDepth(amqp.url, topology.queue)).toBe(0));
  });

  it('a batch message with an undecodable line: its valid events are handled, the message dead-lettered', async () => {
    const handled: UsageEvent[] = [];
    const { consumer, logger } = consume(async (batch) => void handled.push(...batch));
    await consumer.ready();
    const valid = [sampleEvent(), sampleEvent()];
    const after = sampleEvent();
    await publishRawBatches([
      [JSON.stringify(valid[0]), '{not json', JSON.stringify(valid[1])],
      [JSON.stringify(after)],
    ]);
    await vi.waitFor(
      () => expect(handled.map((e) => e.id).sort()).toEqual([...valid, after].map((e) => e.id).sort()),
      {
        timeout: 10_000,
      },
    );
    expect(consumer.stats().deadLettered).toBe(1);
    expect(logger.lines.filter((l) => l.level === 'error').map((l) => l.fields.reason)).toEqual([
      'body is not JSON',
    ]);
    const dead = await vi.waitFor(async () => {
      const messages = await drainQueue(amqp.url, topology.deadLetterQueue);
      expect(messages).toHaveLength(1);
      return messages;
    });
    expect(dead[0]?.properties.type).toBe(USAGE_BATCH_MESSAGE_TYPE);
    // The consumer's channel survived (no double settle): later messages are acked, none redelivered.
    await vi.waitFor(async () => expect(await queueDepth(amqp.url, topology.queue)).toBe(0));
    expect(consumer.stats().connected).toBe(true);
  });

  it('hands duplicate deliveries of one event id to handle once per batch', async () => {
    const handled: UsageEvent[][] = [];
    const { consumer } = consume(async (batch) => void handled.push(batch), {
      batchSize: 100,
      prefetch: 200,
    });
    await consumer.ready();
    const event = sampleEvent();
    await publishRaw([JSON.stringify(event), JSON.stringify(event)]);
    await vi.waitFor(() => expect(consumer.stats().handled).toBe(1));
    expect(handled).toEqual([[event]]);
  });

  it('close() waits for the batch being handled and acks it', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    const { consumer } = consume(async () => {
      started = true;
      await gate;
    });
    await consumer.ready();
    await publishEvents(3);
    await vi.waitFor(() => expect(started).toBe(true));

    let closed = false;
    const closing = consumer.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    release();
    await closing;
    expect(consumer.stats().handled).toBe(3);
    expect(await queueDepth(amqp.url, topology.queue)).toBe(0);
  });

  it('reconnects after losing the broker and keeps consuming', async () => {
    proxy = await createTcpProxy(hostPortOf(amqp.url));
    const handled: UsageEvent[] = [];
    const { consumer, logger } = consume(async (batch) => void handled.push(...batch), {
      url: proxy.url(amqp.url),
    });
    await consumer.ready();
    await proxy.stop();
    await vi.waitFor(() => expect(consumer.stats().connected).toBe(false));
    const events = await publishEvents(3); // straight to the broker, while the consumer cannot reach it
    await proxy.start();

    await vi.waitFor(() => expect(handled.map((e) => e.id)).toEqual(events.map((e) => e.id)), {
      timeout: 10_000,
    });
    expect(logger.messages('info')).toContain('RabbitMQ connection restored; consuming usage events again');
  });

  describe('concurrency: 2', () => {
    /** A handler that holds the first batch until `release()`, counting batches in it at once. */
    function holdFirst() {
      const batches: string[][] = [];
      let active = 0;
      let maxActive = 0;
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const handle: Handle = async (batch) => {
        batches.push(batch.map((e) => e.id));
        active++;
        maxActive = Math.max(maxActive, active);
        try {
          if (batches.length === 1) await gate;
        } finally {
          active--;
        }
      };
      return { handle, batches, release: () => release(), maxActive: () => maxActive };
    }

    it('handles the next batch while one is in handle, and acks only in delivery order', async () => {
      const h = holdFirst();
      const { consumer } = consume(h.handle, { concurrency: 2, batchSize: 10, prefetch: 40 });
      await consumer.ready();
      // One event per message (the publisher would pack them into one message, one batch).
      const events = Array.from({ length: 30 }, () => sampleEvent());
      await publishRaw(events.map((e) => JSON.stringify(e)));

      await vi.waitFor(() => expect(h.batches).toHaveLength(2));
      await new Promise((r) => setTimeout(r, 100));
      // The second batch is done but waits for the first to be acked: no third batch, no ack yet.
      expect(h.batches).toHaveLength(2);
      expect(consumer.stats().handled).toBe(0);
      expect(consumer.stats().lagMs).toBeGreaterThan(0);

      h.release();
      await vi.waitFor(() => expect(consumer.stats().handled).toBe(30), { timeout: 10_000 });
      expect(h.batches.flat()).toEqual(events.map((e) => e.id));
      expect(h.maxActive()).toBe(2);
      await consumer.close();
      expect(await queueDepth(amqp.url, topology.queue)).toBe(0);
    });

    it('never acks a finished batch ahead of an earlier one: both come again after a lost connection', async () => {
      proxy = await createTcpProxy(hostPortOf(amqp.url));
      const h = holdFirst();
      const { consumer } = consume(h.handle, {
        concurrency: 2,
        batchSize: 10,
        prefetch: 40,
        url: proxy.url(amqp.url),
      });
      await consumer.ready();
      // One event per message (the publisher would pack them into one message, one batch).
      const events = Array.from({ length: 20 }, () => sampleEvent());
      await publishRaw(events.map((e) => JSON.stringify(e)));
      await vi.waitFor(() => expect(h.batches).toHaveLength(2));
      const firstTwo = h.batches.flat();

      await proxy.stop();
      await vi.waitFor(() => expect(consumer.stats().connected).toBe(false));
      await proxy.start();
      h.release();

      await vi.waitFor(() => expect(consumer.stats()).toMatchObject({ connected: true, handled: 20 }), {
        timeout: 10_000,
      });
      // Neither the held batch nor the finished second one was acked: every event came again.
      const again = new Set(h.batches.slice(2).flat());
      for (const id of firstTwo) expect(again.has(id)).toBe(true);
      expect([...again].sort()).toEqual(events.map((e) => e.id).sort());
      await consumer.close();
      expect(await queueDepth(amqp.url, topology.queue)).toBe(0);
    });

    it('still isolates a poison event while the next batch is handled', async () => {
      let poison = '';
      const handledIds: string[] = [];
      const { consumer } = consume(
        async (batch) => {
          if (batch.some((e) => e.id === poison)) throw new Error('invalid input syntax for type json');
          handledIds.push(...batch.map((e) => e.id));
        },
        { concurrency: 2, batchSize: 5, prefetch: 20 },
      );
      await consumer.ready();
      const events = Array.from({ length: 15 }, () => sampleEvent());
      poison = events[1]!.id;
      await publishRaw(events.map((e) => JSON.stringify(e)));

      await vi.waitFor(() => expect(consumer.stats()).toMatchObject({ deadLettered: 1, handled: 14 }), {
        timeout: 10_000,
      });
      expect(handledIds.sort()).toEqual(
        events
          .filter((e) => e.id !== poison)
          .map((e) => e.id)
          .sort(),
      );
      await consumer.close();
      expect(await queueDepth(amqp.url, topology.queue)).toBe(0);
      await vi.waitFor(async () => expect(await queueDepth(amqp.url, topology.deadLetterQueue)).toBe(1));
    });
  });
});

describe('usage consumer of a partition (USAGE_PARTITIONS=2)', () => {
  it('consumes only its partition; of two workers on one partition one is active, the other takes over when it goes', async () => {
    const partitioned = usageTopology(amqp.prefix, 2);
    const routed = createUsagePublisher({ url: amqp.url, topology: partitioned, logger: recordingLogger() });
    const byConsumer = { a: [] as UsageEvent[], b: [] as UsageEvent[], other: [] as UsageEvent[] };
    try {
      const a = consume(async (batch) => void byConsumer.a.push(...batch), {
        topology: partitioned,
        partition: 0,
      });
      await a.consumer.ready();
      const b = consume(async (batch) => void byConsumer.b.push(...batch), {
        topology: partitioned,
        partition: 0,
      });
      const other = consume(async (batch) => void byConsumer.other.push(...batch), {
        topology: partitioned,
        partition: 1,
      });
      await Promise.all([b.consumer.ready(), other.consumer.ready()]);
      const accounts = accountsCoveringPartitions(6, 2);
      const send = async (n: number) => {
        const events = Array.from({ length: n }, (_, i) => sampleEvent({ account_id: accounts[i % 6] }));
        for (const e of events) routed.publish(e);
        expect(await routed.flush(10_000)).toBe(true);
        return events;
      };
      const first = await send(60);
      const p0 = (events: UsageEvent[]) => events.filter((e) => usagePartition(e.account_id, 2) === 0);
      await vi.waitFor(() => expect(byConsumer.a.length + byConsumer.other.length).toBe(60), {
        timeout: 10_000,
      });
      expect(byConsumer.a.map((e) => e.id)).toEqual(p0(first).map((e) => e.id)); // in publish order
      expect(byConsumer.b).toEqual([]); // the standby received nothing
      expect(byConsumer.other.every((e) => usagePartition(e.account_id, 2) === 1)).toBe(true);
      expect(await b.consumer.backlog()).toBe(0);

      await a.consumer.close();
      const second = await send(60);
      await vi.waitFor(() => expect(byConsumer.b.map((e) => e.id)).toEqual(p0(second).map((e) => e.id)), {
        timeout: 10_000,
      });
    } finally {
      await routed.close({ drainTimeoutMs: 1000 });
      for (const c of consumers.splice(0)) await c.close();
      await amqp.cleanup(topologyNames(partitioned));
    }
  });
});
