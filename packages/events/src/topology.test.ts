import { createTestAmqp, type TestAmqp } from '@tollgate/testkit';
import amqplib, { type ChannelModel } from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleEvent } from './test-support';
import {
  declareUsageTopology,
  topologyNames,
  USAGE_DELIVERY_LIMIT,
  type UsageTopology,
  usageQueueArguments,
  usageTopology,
} from './topology';

let amqp: TestAmqp;
let topology: UsageTopology;
let conn: ChannelModel;

beforeEach(async () => {
  amqp = createTestAmqp();
  topology = usageTopology(amqp.prefix);
  conn = await amqplib.connect(amqp.url);
});

afterEach(async () => {
  await conn.close().catch(() => {});
  await amqp.cleanup(topologyNames(topology));
});

describe('usageTopology partitions', () => {
  it('with one partition the names are exactly those of an unpartitioned install', () => {
    const t = usageTopology('tollgate');
    expect(t).toEqual({
      exchange: 'tollgate.usage',
      routingKey: 'usage.v1',
      queue: 'tollgate.billing.usage',
      deadLetterExchange: 'tollgate.usage.dlx',
      deadLetterQueue: 'tollgate.billing.usage.dead',
      partitions: [{ queue: 'tollgate.billing.usage', routingKey: 'usage.v1' }],
    });
    expect(usageQueueArguments(t)).not.toHaveProperty('x-single-active-consumer');
  });

  it('with N partitions: a queue and routing key per partition, single active consumer', () => {
    const t = usageTopology('tollgate', 3);
    expect(t.partitions).toEqual(
      [0, 1, 2].map((i) => ({ queue: `tollgate.billing.usage.p${i}`, routingKey: `usage.v1.p${i}` })),
    );
    expect(usageQueueArguments(t)).toMatchObject({
      'x-single-active-consumer': true,
      'x-queue-type': 'quorum',
    });
    expect(topologyNames(t).queues).toEqual([
      'tollgate.billing.usage',
      'tollgate.billing.usage.p0',
      'tollgate.billing.usage.p1',
      'tollgate.billing.usage.p2',
      'tollgate.billing.usage.dead',
    ]);
  });

  it('declares every partition queue, each bound by its own routing key only', async () => {
    const t = usageTopology(amqp.prefix, 2);
    const ch = await conn.createConfirmChannel();
    try {
      await declareUsageTopology(ch, t);
      ch.publish(t.exchange, 'usage.v1.p1', Buffer.from('{}'));
      await ch.waitForConfirms();
      await expect
        .poll(async () => (await ch.checkQueue(t.partitions[1]?.queue as string)).messageCount)
        .toBe(1);
      expect((await ch.checkQueue(t.partitions[0]?.queue as string)).messageCount).toBe(0);
    } finally {
      await amqp.cleanup(topologyNames(t));
    }
  });
});

describe('declareUsageTopology', () => {
  it('is idempotent: the proxy and billing can both declare on every start', async () => {
    const ch = await conn.createChannel();
    await declareUsageTopology(ch, topology);
    await declareUsageTopology(ch, topology);
    const other = await conn.createConfirmChannel();
    await declareUsageTopology(other, topology);
    expect((await ch.checkQueue(topology.queue)).messageCount).toBe(0);
    await ch.checkExchange(topology.deadLetterExchange);
    await ch.checkQueue(topology.deadLetterQueue);
  });

  it('declares billing queue as a quorum queue with the dead-letter exchange and delivery limit', async () => {
    await declareUsageTopology(await conn.createChannel(), topology);
    // Re-declaring with other arguments is refused by RabbitMQ: proof of the declared ones.
    const ch = await conn.createChannel();
    ch.on('error', () => {});
    await expect(ch.assertQueue(topology.queue, { durable: true })).rejects.toThrow(/PRECONDITION_FAILED/);
    const same = await conn.createChannel();
    await same.assertQueue(topology.queue, { durable: true, arguments: usageQueueArguments(topology) });
  });

  it('routes usage.v1 messages to the queue and dead-letters a message requeued past the delivery limit', async () => {
    const ch = await conn.createConfirmChannel();
    await declareUsageTopology(ch, topology);
    const event = sampleEvent();
    ch.publish(topology.exchange, topology.routingKey, Buffer.from(JSON.stringify(event)), {
      persistent: true,
    });
    await ch.waitForConfirms();

    // A poison message: every consumer attempt fails and requeues it.
    let deliveries = 0;
    for (;;) {
      const msg = await ch.get(topology.queue);
      if (msg === false) {
        // Requeue is asynchronous: the message may be back a moment later, or dead-lettered.
        const dead = await ch.get(topology.deadLetterQueue, { noAck: true });
        if (dead !== false) {
          expect(JSON.parse(dead.content.toString()).id).toBe(event.id);
          break;
        }
        continue;
      }
      deliveries++;
      ch.nack(msg, false, true);
      expect(deliveries).toBeLessThanOrEqual(USAGE_DELIVERY_LIMIT + 1);
    }
    expect(deliveries).toBeGreaterThanOrEqual(USAGE_DELIVERY_LIMIT);
  });

  it('names the entity when a declaration conflicts', async () => {
    const ch = await conn.createChannel();
    ch.on('error', () => {});
    await ch.assertQueue(topology.queue, { durable: true }); // a classic queue under billing's name
    const next = await conn.createChannel();
    next.on('error', () => {});
    await expect(declareUsageTopology(next, topology)).rejects.toThrow(
      `declaring queue ${topology.queue} failed`,
    );
  });
});
