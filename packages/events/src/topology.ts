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
}

export function usageTopology(prefix: string): UsageTopology {
  return {
    exchange: `${prefix}.usage`,
    routingKey: 'usage.v1',
    queue: `${prefix}.billing.usage`,
    deadLetterExchange: `${prefix}.usage.dlx`,
    deadLetterQueue: `${prefix}.billing.usage.dead`,
  };
}

/**
 * Deliveries of one message to billing before RabbitMQ dead-letters it instead of requeueing it
 * (quorum queue `x-delivery-limit`). Part of the queue's declaration: every declarer must use the
 * same value, or the second declaration fails with PRECONDITION_FAILED.
 */
export const USAGE_DELIVERY_LIMIT = 20;

/** The queue arguments of billing's usage queue, exactly as declared. */
export function usageQueueArguments(topology: UsageTopology): Record<string, unknown> {
  return {
    'x-queue-type': 'quorum',
    'x-dead-letter-exchange': topology.deadLetterExchange,
    'x-delivery-limit': USAGE_DELIVERY_LIMIT,
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
 *   exchange (topic, durable) --routingKey--> queue (quorum, durable, delivery limit, DLX)
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
  await step(`queue ${topology.queue}`, () =>
    channel.assertQueue(topology.queue, { durable: true, arguments: usageQueueArguments(topology) }),
  );
  await step(`binding ${topology.queue}`, () =>
    channel.bindQueue(topology.queue, topology.exchange, topology.routingKey),
  );
}

/** Every queue and exchange name of a topology (for test cleanup). */
export function topologyNames(topology: UsageTopology): { queues: string[]; exchanges: string[] } {
  return {
    queues: [topology.queue, topology.deadLetterQueue],
    exchanges: [topology.exchange, topology.deadLetterExchange],
  };
}
