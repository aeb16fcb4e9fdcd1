import type { RecallDeps } from '../auth/recall';
import type { ProxyConfig } from '../config';
import type { Completion } from '../pipeline/completion';
import { CompletionSlots } from '../pipeline/concurrency';
import type { PipelineDeps } from '../pipeline/pipeline';
import { KeyRing, ProviderHealth } from '../routing/health';

/**
 * One pipeline's state for every door, from the config: concurrency caps, provider health, key
 * rotation, the limits of a completion, and `live` (the completions in flight, stopped at shutdown).
 */
export function pipelineDeps(
  config: ProxyConfig,
  deps: Pick<PipelineDeps, 'catalog' | 'upstreams' | 'guard' | 'sink' | 'estimator' | 'logger'>,
  live: Set<Completion>,
  recalled: RecallDeps | undefined,
): PipelineDeps {
  return {
    ...deps,
    keepAliveIntervalMs: config.KEEPALIVE_INTERVAL_MS,
    streamWriteTimeoutMs: config.STREAM_WRITE_TIMEOUT_MS,
    maxDurationMs: config.COMPLETION_MAX_DURATION_MS,
    cancelDrainMs: config.CANCEL_DRAIN_MS,
    maxImages: config.MAX_IMAGES_PER_REQUEST,
    bodies: { maxBytes: config.BODIES_MAX_BYTES, patterns: config.BODIES_REDACT },
    concurrency: new CompletionSlots(
      config.MAX_CONCURRENT_COMPLETIONS_PER_KEY,
      config.MAX_CONCURRENT_COMPLETIONS_PER_ACCOUNT,
    ),
    routing: {
      maxAttempts: config.ROUTING_MAX_ATTEMPTS,
      deadlineMs: config.ROUTING_DEADLINE_MS,
      health: new ProviderHealth(config.CIRCUIT_FAILURE_THRESHOLD, config.CIRCUIT_COOLDOWN_MS),
      keys: new KeyRing(),
    },
    live,
    recalled,
  };
}
