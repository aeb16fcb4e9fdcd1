/**
 * RabbitMQ names, all derived from one prefix (AMQP_PREFIX) so stacks and test runs sharing a broker
 * never see each other's messages.
 */
export interface UsageTopology {
  /** Durable topic exchange the proxy publishes usage events to. */
  exchange: string;
  /** Routing key of version-1 usage events. */
  routingKey: string;
  /** Billing's durable quorum queue, bound to `exchange`. */
  queue: string;
  /** Dead-letter exchange and queue for events that can never be processed. */
  deadLetterExchange: string;
  deadLetterQueue: string;
  /**
   * The usage partitions (USAGE_PARTITIONS): one queue each, bound by its own routing key; the
   * publisher sends an account's events to partition `usagePartition(account, N)`. With one partition
   * it is exactly `queue`/`routingKey` above (the names of an unpartitioned install); with N > 1 they
   * are `<prefix>.billing.usage.p<i>` / `usage.v1.p<i>`, single-active-consumer quorum queues.
   */
  partitions: readonly UsagePartition[];
}

export interface UsagePartition {
  queue: string;
  routingKey: string;
}

/** Most usage partitions (USAGE_PARTITIONS). */
export const MAX_USAGE_PARTITIONS = 64;

export function usageTopology(prefix: string, partitions = 1): UsageTopology {
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_USAGE_PARTITIONS)
    throw new Error(`usage partitions must be an integer in 1..${MAX_USAGE_PARTITIONS}, got ${partitions}`);
  const queue = `${prefix}.billing.usage`;
  const routingKey = 'usage.v1';
  return {
    exchange: `${prefix}.usage`,
    routingKey,
    queue,
    deadLetterExchange: `${prefix}.usage.dlx`,
    deadLetterQueue: `${prefix}.billing.usage.dead`,
    partitions:
      partitions === 1
        ? [{ queue, routingKey }]
        : Array.from({ length: partitions }, (_, i) => ({
            queue: `${queue}.p${i}`,
            routingKey: `${routingKey}.p${i}`,
          })),
  };
}

/** The partition `index` of `topology` (throws on one it does not have). */
export function usagePartitionOf(topology: UsageTopology, index: number): UsagePartition {
  const p = topology.partitions[index];
  if (!p)
    throw new Error(
      `usage partition ${index} does not exist (USAGE_PARTITIONS=${topology.partitions.length})`,
    );
  return p;
}

/**
 * Deliveries of one message to billing before RabbitMQ dead-letters it instead of requeueing it
 * (quorum queue `x-delivery-limit`). Part of the queue's declaration: every declarer must use the
 * same value, or the second declaration fails with PRECONDITION_FAILED.
 */
export const USAGE_DELIVERY_LIMIT = 20;

/**
 * The queue arguments of billing's usage queues, exactly as declared. Partition queues (N > 1) are
 * single-active-consumer: of the billing workers subscribed to a partition one receives at a time
 * (the others are hot standbys taking over when it goes), so an account's events are handled in
 * publish order. The unpartitioned queue keeps the arguments it always had (redeclaring a queue with
 * other arguments fails), so with one partition several workers share it round robin.
 */
export function usageQueueArguments(topology: UsageTopology): Record<string, unknown> {
  return {
    'x-queue-type': 'quorum',
    'x-dead-letter-exchange': topology.deadLetterExchange,
    'x-delivery-limit': USAGE_DELIVERY_LIMIT,
    ...(topology.partitions.length > 1 ? { 'x-single-active-consumer': true } : {}),
  };
}

/** The subset of an amqplib channel that declaring needs (any Channel or ConfirmChannel fits). */
export interface TopologyChannel {
  assertExchange(exchange: string, type: string, options?: { durable?: boolean }): Promise<unknown>;
  assertQueue(queue: string, options?: { durable?: boolean; arguments?: unknown }): Promise<unknown>;
  bindQueue(queue: string, source: string, pattern: string): Promise<unknown>;
}

/**
 * Declares the usage topology; idempotent, so the proxy (publisher) and billing (consumer) both call
 * it on every (re)connect:
 *
 *   exchange (topic, durable) --routingKey--> queue (quorum, durable, delivery limit, DLX), per partition
 *   queue --rejected / delivery limit reached--> DLX (fanout, durable) --> dead-letter queue (quorum)
 *
 * A declaration that conflicts with an existing one (same name, other arguments) makes RabbitMQ
 * close the channel with PRECONDITION_FAILED; the rejection names the entity.
 */
export async function declareUsageTopology(channel: TopologyChannel, topology: UsageTopology): Promise<void> {
  const step = async (what: string, run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (err) {
      throw new Error(`declaring ${what} failed: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
  };
  await step(`exchange ${topology.deadLetterExchange}`, () =>
    channel.assertExchange(topology.deadLetterExchange, 'fanout', { durable: true }),
  );
  await step(`queue ${topology.deadLetterQueue}`, () =>
    channel.assertQueue(topology.deadLetterQueue, { durable: true, arguments: { 'x-queue-type': 'quorum' } }),
  );
  await step(`binding ${topology.deadLetterQueue}`, () =>
    channel.bindQueue(topology.deadLetterQueue, topology.deadLetterExchange, ''),
  );
  await step(`exchange ${topology.exchange}`, () =>
    channel.assertExchange(topology.exchange, 'topic', { durable: true }),
  );
  const args = usageQueueArguments(topology);
  for (const { queue, routingKey } of topology.partitions) {
    await step(`queue ${queue}`, () => channel.assertQueue(queue, { durable: true, arguments: args }));
    await step(`binding ${queue}`, () => channel.bindQueue(queue, topology.exchange, routingKey));
  }
}

/** Every queue and exchange name of a topology (for test cleanup). */
export function topologyNames(topology: UsageTopology): { queues: string[]; exchanges: string[] } {
  return {
    queues: [
      ...new Set([topology.queue, ...topology.partitions.map((p) => p.queue)]),
      topology.deadLetterQueue,
    ],
    exchanges: [topology.exchange, topology.deadLetterExchange],
  };
}
