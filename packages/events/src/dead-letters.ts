import amqp, { type GetMessage } from 'amqplib';
import { usagePartition } from './partition';
import type { UsageTopology } from './topology';
import { parseUsageEvent, USAGE_BATCH_MESSAGE_TYPE, usageBatchBody, usageMessageBodies } from './usage-event';

/**
 * Header of a message billing refused on purpose (bad signature, cost that does not recompute, key of
 * another account, …): why. Such messages are copied to the dead-letter exchange with it and acked.
 */
export const DEAD_LETTER_REASON_HEADER = 'x-tollgate-reason';

/** One message of the dead-letter queue, as an operator needs to judge it. */
export interface DeadLetter {
  /** The event id when the body decodes, else null. */
  id: string | null;
  /** Why it is there: the schema error for an undecodable/invalid body, else the broker's reason. */
  reason: string;
  /**
   * `refused` (billing's checks: the reason says which), `rejected` (failed on its own, or invalid) or
   * `delivery_limit` (too many redeliveries).
   */
  death: string | null;
  account_id: string | null;
  key_id: string | null;
  cost: string | null;
  finished_at: string | null;
  bytes: number;
}

export interface DeadLetterReport {
  /** Messages in the dead-letter queue (a `usage.batch.v1` message holds several events). */
  count: number;
  /** One entry per event of the messages read. */
  messages: DeadLetter[];
}

export interface ReplayReport {
  /** Valid events published back to the usage exchange (billing dedupes by id: exactly once). */
  replayed: number;
  /**
   * Events left in the dead-letter queue because their body can never be recorded (the invalid lines
   * of a batch message are put back as a message of their own, its valid events replayed).
   */
  invalid: number;
  /** Messages still in the queue after the run (over the limit, or invalid). */
  remaining: number;
}

function describe(msg: GetMessage): DeadLetter[] {
  const deaths = msg.properties.headers?.['x-death'] as Array<{ reason?: string }> | undefined;
  const refused = msg.properties.headers?.[DEAD_LETTER_REASON_HEADER];
  const death = typeof refused === 'string' ? 'refused' : (deaths?.[0]?.reason ?? null);
  return usageMessageBodies(msg.content, msg.properties.type).map((body) =>
    describeEvent(body, death, typeof refused === 'string' ? refused : null),
  );
}

function describeEvent(body: Buffer, death: string | null, refused: string | null): DeadLetter {
  const parsed = parseUsageEvent(body);
  if (!parsed.ok)
    return {
      id: null,
      reason: parsed.reason,
      death,
      account_id: null,
      key_id: null,
      cost: null,
      finished_at: null,
      bytes: body.length,
    };
  const e = parsed.event;
  return {
    id: e.id,
    reason:
      refused ??
      (death === 'delivery_limit' ? 'redelivered too often' : 'failed on its own (see billing logs)'),
    death,
    account_id: e.account_id,
    key_id: e.key_id,
    cost: e.type === 'usage' ? e.cost : '0',
    finished_at: e.finished_at,
    bytes: body.length,
  };
}

/**
 * Reads up to `limit` messages of the dead-letter queue without removing them (they are fetched
 * unacknowledged and returned to the queue when the channel closes).
 */
export async function inspectDeadLetters(
  url: string,
  topology: UsageTopology,
  limit: number,
): Promise<DeadLetterReport> {
  const conn = await amqp.connect(url, { timeout: 5000 });
  try {
    const ch = await conn.createChannel();
    const { messageCount } = await ch.checkQueue(topology.deadLetterQueue);
    const messages: DeadLetter[] = [];
    for (let i = 0; i < Math.min(limit, messageCount); i++) {
      const msg = await ch.get(topology.deadLetterQueue, { noAck: false });
      if (!msg) break;
      messages.push(...describe(msg));
    }
    await ch.close(); // unacked: back to the queue
    return { count: messageCount, messages };
  } finally {
    await conn.close().catch(() => {});
  }
}

/**
 * Publishes up to `limit` valid dead-lettered events back to the usage exchange (persistent, with
 * publisher confirms), removing each from the dead-letter queue only after the broker confirmed its
 * copy. A crash in between leaves the event in both places; billing records an id once, so a replay
 * never bills twice. Bodies that can never be recorded (undecodable, invalid) stay where they are.
 */
export async function replayDeadLetters(
  url: string,
  topology: UsageTopology,
  limit: number,
): Promise<ReplayReport> {
  const conn = await amqp.connect(url, { timeout: 5000 });
  try {
    const ch = await conn.createConfirmChannel();
    const { messageCount } = await ch.checkQueue(topology.deadLetterQueue);
    let replayed = 0;
    let invalid = 0;
    for (let i = 0; i < messageCount && replayed < limit; i++) {
      const msg = await ch.get(topology.deadLetterQueue, { noAck: false });
      if (!msg) break;
      const bodies = usageMessageBodies(msg.content, msg.properties.type);
      const good = bodies.filter((b) => parseUsageEvent(b).ok);
      const bad = bodies.filter((b) => !parseUsageEvent(b).ok);
      if (good.length === 0) {
        invalid += bad.length; // left unacked: returns to the queue when the channel closes
        continue;
      }
      const { headers, ...props } = msg.properties;
      const {
        'x-death': _death,
        'x-first-death-exchange': _e,
        'x-first-death-queue': _q,
        'x-first-death-reason': _r,
        [DEAD_LETTER_REASON_HEADER]: _refused,
        ...rest
      } = (headers ?? {}) as Record<string, unknown>;
      const batch = (parts: Buffer[]) =>
        parts.length === 1 && msg.properties.type !== USAGE_BATCH_MESSAGE_TYPE
          ? (parts[0] as Buffer)
          : usageBatchBody(parts);
      // Back to the partition of its (first) event's account: a publisher never mixes partitions in one
      // message, so under the same USAGE_PARTITIONS its events all belong there.
      const first = parseUsageEvent(good[0] as Buffer);
      const partition = first.ok ? usagePartition(first.event.account_id, topology.partitions.length) : 0;
      const routingKey = (topology.partitions[partition] ?? topology).routingKey;
      ch.publish(topology.exchange, routingKey, bad.length === 0 ? msg.content : batch(good), {
        ...props,
        headers: { ...rest, 'x-tollgate-replayed': true },
        persistent: true,
      });
      // A batch message's invalid lines stay in the dead-letter queue, as a message of their own
      // (through the dead-letter exchange: billing's broker user may not write to the default one).
      if (bad.length > 0) {
        ch.publish(topology.deadLetterExchange, '', usageBatchBody(bad), {
          ...props,
          type: USAGE_BATCH_MESSAGE_TYPE,
          headers: rest,
          persistent: true,
        });
        invalid += bad.length;
      }
      await ch.waitForConfirms();
      ch.ack(msg);
      replayed += good.length;
    }
    await ch.close();
    const after = await conn.createChannel();
    const { messageCount: remaining } = await after.checkQueue(topology.deadLetterQueue);
    await after.close();
    return { replayed, invalid, remaining };
  } finally {
    await conn.close().catch(() => {});
  }
}
