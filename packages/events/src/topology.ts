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
