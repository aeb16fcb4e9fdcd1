import { createTestAmqp, type TestAmqp } from '@tollgate/testkit';
import amqplib from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inspectDeadLetters, replayDeadLetters } from './dead-letters';
import { drainEvents, drainQueue, sampleEvent } from './test-support';
import { declareUsageTopology, topologyNames, type UsageTopology, usageTopology } from './topology';
import { USAGE_BATCH_MESSAGE_TYPE } from './usage-event';

let amqp: TestAmqp;
let topology: UsageTopology;

beforeEach(() => {
  amqp = createTestAmqp();
  topology = usageTopology(amqp.prefix);
});
afterEach(async () => {
  await amqp.cleanup(topologyNames(topology));
});

/** Puts messages straight into the dead-letter queue, as the broker would after a reject. */
async function deadLetter(messages: Array<{ body: string; type?: string }>) {
  const conn = await amqplib.connect(amqp.url);
  try {
    const ch = await conn.createConfirmChannel();
    await declareUsageTopology(ch, topology);
    for (const m of messages)
      ch.sendToQueue(topology.deadLetterQueue, Buffer.from(m.body), { persistent: true, type: m.type });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
}

describe('dead-letter tools with batch messages (usage.batch.v1)', () => {
  it('show lists each event of a batch message; replay sends its valid events back and keeps the invalid line', async () => {
    const [a, b, single] = [sampleEvent(), sampleEvent(), sampleEvent()];
    await deadLetter([
      {
        body: [JSON.stringify(a), '{not json', JSON.stringify(b)].join('\n'),
        type: USAGE_BATCH_MESSAGE_TYPE,
      },
      { body: JSON.stringify(single), type: 'usage.v1' },
    ]);

    const shown = await inspectDeadLetters(amqp.url, topology, 10);
    expect(shown.count).toBe(2);
    expect(shown.messages.map((m) => m.id)).toEqual([a?.id, null, b?.id, single?.id]);
    expect(shown.messages[1]?.reason).toBe('body is not JSON');

    expect(await replayDeadLetters(amqp.url, topology, 10)).toEqual({
      replayed: 3,
      invalid: 1,
      remaining: 1,
    });
    const back = await drainEvents(amqp.url, topology.queue);
    expect(back.map((e) => e.properties.messageId)).toEqual([a?.id, b?.id, single?.id]);
    expect(back[0]?.message.properties.headers?.['x-tollgate-replayed']).toBe(true);
    const left = await drainQueue(amqp.url, topology.deadLetterQueue);
    expect(left.map((m) => m.content.toString())).toEqual(['{not json']);
    expect(left[0]?.properties.type).toBe(USAGE_BATCH_MESSAGE_TYPE);
  });
});
