import {
  combineConsumers,
  createUsageConsumer,
  parseUsagePartitionList,
  type UsageConsumer,
  type UsageConsumerOptions,
  type UsageTopology,
} from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import type { BillingConfig } from '../config';
import { classifyBillingFailure } from './failure';

export interface PartitionConsumer {
  partition: number;
  consumer: UsageConsumer;
}

/**
 * The worker's usage consumers: one per partition it takes (USAGE_WORKER_PARTITIONS of
 * USAGE_PARTITIONS), each on its own connection with its own batches, so partitions are handled in
 * parallel and each in its delivery order. `consumer` is all of them seen as one (readiness, close,
 * the unlabelled worker metrics); null with WORKER_ENABLED=false.
 */
export function usageConsumers(
  config: BillingConfig,
  deps: {
    topology: UsageTopology;
    logger: Logger;
    verifyMessage: UsageConsumerOptions['verifyMessage'];
    handle: UsageConsumerOptions['handle'];
  },
): { consumer: UsageConsumer | null; partitions: PartitionConsumer[] } {
  if (!config.WORKER_ENABLED) return { consumer: null, partitions: [] };
  const taken = parseUsagePartitionList(config.USAGE_WORKER_PARTITIONS, config.USAGE_PARTITIONS);
  const partitions = taken.map((partition) => ({
    partition,
    consumer: createUsageConsumer({
      url: config.AMQP_URL,
      topology: deps.topology,
      partition,
      logger: deps.logger,
      prefetch: config.PREFETCH,
      batchSize: config.BATCH_SIZE,
      concurrency: config.CONCURRENT_BATCHES,
      batchTimeoutMs: config.BATCH_TIMEOUT_MS,
      connectionName: config.USAGE_PARTITIONS > 1 ? `tollgate-billing-p${partition}` : 'tollgate-billing',
      classify: classifyBillingFailure,
      verifyMessage: deps.verifyMessage,
      handle: deps.handle,
    }),
  }));
  return { consumer: combineConsumers(partitions.map((p) => p.consumer)), partitions };
}
